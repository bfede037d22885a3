/**
 * PostgreSQL answers a cancel in one statement that acts on the state its snapshot shows
 * (src/store/postgres/jobs.ts, CANCEL). When another transaction moves the job on while
 * the cancel waits for the row (a claim, a completion), the statement matches nothing and
 * runs again on a newer snapshot. These hold such a transaction open, let the cancel
 * block on it, commit it, and check the answer is the job's new state, not "no such job".
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { JOB_COLUMNS } from '../../src/store/postgres/move.js';
import type { NewJob } from '../../src/store/store.js';
import { postgresUrl, tempDatabase } from '../helpers/db.js';

const stores: PostgresStore[] = [];
const clients: pg.Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.end();
  for (const store of stores.splice(0)) await store.close();
});

async function setUp() {
  const db = tempDatabase();
  const schema = new URL(db.url).searchParams.get('schema')!;
  const store = new PostgresStore(db.url.replace(/[?&]schema=[^&]*/, ''), { schema });
  stores.push(store);
  await store.migrate();
  const other = new pg.Client({ connectionString: postgresUrl });
  clients.push(other);
  await other.connect();
  await other.query(`SET search_path TO "${schema}"`);
  const job: NewJob = { queue: 'default', task: 't', payload: '{}', priority: 0, runAt: 0, maxAttempts: 3, timeoutMs: null, key: null };
  const [inserted] = await store.jobInsertMany({ jobs: [job], now: Date.now() });
  return { store, other, schema, id: inserted!.job.id };
}

/** Resolves once the cancel statement of `schema` waits for a lock (the row `other` holds). */
async function cancelBlocked(other: pg.Client, schema: string): Promise<void> {
  const watcher = new pg.Client({ connectionString: postgresUrl });
  clients.push(watcher);
  await watcher.connect();
  for (const deadline = Date.now() + 60_000; ; ) {
    if (Date.now() > deadline) throw new Error('the cancel did not wait for the held row within 60 s');
    const { rows } = await watcher.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%cancel_requested_at = coalesce%'
      AND strpos(query, $2) > 0 AND pid <> $1`, [(other as unknown as { processID: number }).processID, `"${schema}".jobs`]);
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('a cancel racing another transaction (PostgreSQL)', () => {
  it('a running job completed while the cancel waited: answered unchanged, completed, no request stored', async () => {
    const { store, other, schema, id } = await setUp();
    const [claimed] = await store.jobClaim({ workerId: 'w', tasks: ['t'], queues: ['default'], limit: 1, leaseMs: 60_000, now: Date.now() });
    expect(claimed?.id).toBe(id);
    const columns = Object.keys(JOB_COLUMNS);
    await other.query('BEGIN');
    await other.query(`WITH gone AS (DELETE FROM jobs WHERE id = $1 RETURNING *)
      INSERT INTO jobs_finished (${columns.join(', ')}) SELECT ${columns.map((c) => (c === 'state' ? `'completed'` : c === 'finished_at' ? 'now()' : c)).join(', ')} FROM gone`, [id]);
    const cancel = store.jobCancel({ id, reason: 'too late', now: Date.now() });
    await cancelBlocked(other, schema);
    await other.query('COMMIT');
    const answer = await cancel;
    expect(answer?.outcome).toBe('unchanged');
    expect(answer?.job).toMatchObject({ id, state: 'completed', cancelRequestedAt: null, cancelReason: null });
  });

  it('a queued job claimed while the cancel waited: answered requested, the request stored on the running job', async () => {
    const { store, other, schema, id } = await setUp();
    await other.query('BEGIN');
    await other.query(`UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = 'w', lease_expires_at = now() + interval '1 minute',
      lease_token = lease_token + 1, started_at = now() WHERE id = $1`, [id]);
    const cancel = store.jobCancel({ id, reason: 'stop it', now: Date.now() });
    await cancelBlocked(other, schema);
    await other.query('COMMIT');
    const answer = await cancel;
    expect(answer?.outcome).toBe('requested');
    expect(answer?.job).toMatchObject({ id, state: 'running', cancelReason: 'stop it', leaseOwner: 'w' });
    expect((await store.jobCancelRequests({ ids: [id] })).map((r) => r.id)).toEqual([id]);
  });

  it('a job that does not exist: null', async () => {
    const { store } = await setUp();
    expect(await store.jobCancel({ id: 987_654, reason: null, now: Date.now() })).toBeNull();
  });
});
