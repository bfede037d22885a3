/**
 * Claims that do not queue behind one another (issue 33 item 3): on PostgreSQL a worker
 * keeps up to the pool's size of claims in flight under a backlog, each on a pool
 * connection of its own, and a completion is written beside a claim in flight rather
 * than after it. The test holds one claim open inside the database: a trigger (made here,
 * in the test's own schema) makes claiming a `blocker` job wait for an advisory lock the
 * test holds. While that claim waits, seen waiting in pg_stat_activity, another claim of
 * the same worker takes the next job, which runs and is written as completed.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { openBaton, postgresUrl, tempDatabase } from '../helpers/db.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';

const LOCK = 33_003;

const admins: pg.Client[] = [];
afterEach(async () => {
  for (const admin of admins.splice(0)) await admin.end();
});

async function adminClient(): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: postgresUrl });
  admins.push(admin);
  await admin.connect();
  return admin;
}

/** Handlers that wait until the test calls `finish(n)` (n = the payload); `started` lists payloads in start order. */
function gated() {
  const gates = new Map<number, () => void>();
  const started: number[] = [];
  const task = defineTask('gated', {
    handler: (n: number) => {
      started.push(n);
      return new Promise<number>((resolve) => gates.set(n, () => resolve(n)));
    },
  });
  const finish = async (n: number) => {
    await until(() => gates.has(n), `gated job ${n} to run`);
    gates.get(n)!();
  };
  return { task, finish, started };
}

/** Makes claiming job `id` of `schema` wait, inside the claim's transaction, until the admin session releases advisory lock LOCK (held from here). */
async function holdClaimOf(admin: pg.Client, schema: string, condition: string): Promise<void> {
  await admin.query(`CREATE FUNCTION "${schema}".hold_blocker() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock_shared(${LOCK}); RETURN NEW; END $$`);
  await admin.query(`CREATE TRIGGER hold_blocker BEFORE UPDATE ON "${schema}".jobs FOR EACH ROW
      WHEN (OLD.state = 'queued' AND NEW.state = 'running' AND ${condition}) EXECUTE FUNCTION "${schema}".hold_blocker()`);
  await admin.query('SELECT pg_advisory_lock($1)', [LOCK]);
}

/** Claims of the process named `app` waiting for the advisory lock now. */
async function waitingClaims(admin: pg.Client, app: string): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'", [app]);
  return rows[0]!.n;
}

describe('claims in flight together (PostgreSQL)', () => {
  it('with a claim held open in the database, a second claim of the same worker proceeds on another connection; its job runs and its completion is written while the first still waits', async () => {
    const db = tempDatabase();
    const app = `overlap_${randomBytes(4).toString('hex')}`;
    const baton = await openBaton({ database: `${db.url}&application_name=${app}` });
    expect(baton.store.claimsInFlight).toBe(4);
    const schema = new URL(db.url).searchParams.get('schema')!;
    const admin = await adminClient();
    await holdClaimOf(admin, schema, "NEW.task = 'blocker'");

    const { task, finish } = gated();
    const blocker = defineTask('blocker', { handler: async () => 'blocker' });
    const quick = defineTask('quick', { handler: async () => 'quick' });
    // Claim order is id order: two gated jobs, then the blocker, then a quick one.
    const [g0, g1] = await baton.enqueueMany([{ task, payload: 0 }, { task, payload: 1 }]);
    const b = await baton.enqueue(blocker, null);
    const q = await baton.enqueue(quick, null);
    const worker = baton.worker({ tasks: [task, blocker, quick], concurrency: 2, pollInterval: 60_000 });
    const allDone = collectEvents(worker, 'job:completed', 4);
    await worker.start(); // its first claim took both gated jobs: a full batch, a backlog

    // A freed slot: the claim that fills it takes the blocker and waits in the database.
    await finish(0);
    await until(async () => (await waitingClaims(admin, app)) === 1, 'a claim to wait for the advisory lock');

    // The other slot frees: a second claim goes beside the first, skips the blocker (locked) and takes the quick job.
    const quickDone = waitForEvent(worker, 'job:completed', (e) => e.job.id === q.id);
    await finish(1);
    await quickDone;
    expect(await waitingClaims(admin, app)).toBe(1);
    expect((await baton.getJob(q.id)).state).toBe('completed');
    expect((await baton.getJob(b.id)).state).toBe('queued'); // the first claim has not committed

    await admin.query('SELECT pg_advisory_unlock($1)', [LOCK]);
    const done = await allDone;
    expect(done.map((e) => e.job.id).sort((x, y) => x - y)).toEqual([g0!.id, g1!.id, b.id, q.id].sort((x, y) => x - y));
    for (const id of [g0!.id, g1!.id, b.id, q.id]) expect(await baton.getJob(id)).toMatchObject({ state: 'completed', attempt: 1 });
    await worker.stop();
  });

  it('jobs claimed ahead by two claims that return out of order start in their place in line, not in the order they arrived', async () => {
    const db = tempDatabase();
    const app = `overlap_${randomBytes(4).toString('hex')}`;
    const baton = await openBaton({ database: `${db.url}&application_name=${app}` });
    const schema = new URL(db.url).searchParams.get('schema')!;
    const { task, finish, started } = gated();
    const jobs = await baton.enqueueMany(Array.from({ length: 5 }, (_, n) => ({ task, payload: n })));
    const ids = jobs.map((j) => j.id);
    const admin = await adminClient();
    await holdClaimOf(admin, schema, `OLD.id = ${ids[3]}`);
    const worker = baton.worker({ tasks: [task], concurrency: 1, prefetch: 2, pollInterval: 60_000 });
    const firstClaim = collectEvents(worker, 'job:claimed', 3);
    await worker.start(); // claims 0, 1, 2 (a full batch, a backlog): 0 runs, 1 and 2 are held
    await firstClaim;

    // 1 takes the slot; the claim that refills the room takes job 3 and waits in the database.
    await finish(0);
    await until(async () => (await waitingClaims(admin, app)) === 1, 'the claim of job 3 to wait for the advisory lock');
    // 2 takes the slot; a second claim goes beside the first, skips job 3 (locked), and brings job 4 back first.
    const claimed4 = waitForEvent(worker, 'job:claimed', (e) => e.job.id === ids[4]);
    await finish(1);
    await claimed4;
    const claimed3 = waitForEvent(worker, 'job:claimed', (e) => e.job.id === ids[3]);
    await admin.query('SELECT pg_advisory_unlock($1)', [LOCK]);
    await claimed3;

    // Held now: 4, then 3, in the order they arrived. The slot 2 frees goes to 3.
    const allDone = collectEvents(worker, 'job:completed', 3);
    await finish(2);
    await until(() => started.length === 4, 'a held job to take the freed slot');
    expect(started).toEqual([0, 1, 2, 3]);
    for (const n of [3, 4]) await finish(n);
    await allDone;
    expect(started).toEqual([0, 1, 2, 3, 4]);
    await worker.stop();
  });
});
