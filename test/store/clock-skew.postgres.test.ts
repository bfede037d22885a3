/**
 * Clock skew on PostgreSQL: a host whose clock is 90 s ahead of the database's
 * (simulated by the store's injectable host clock) still takes its time from the
 * database — Store.clock is the host clock plus the offset measured at open — so
 * it neither starts a delayed job before its runAt nor rescues a healthy job whose
 * lease it believes expired, and it logs one warning about its clock. The test
 * process runs on the database's host, so `Date.now()` here is the database's time.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { defineTask, type Baton } from 'baton-jobs';
import { Rescuer } from '../../src/maintenance/rescuer.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { openBaton, tempDatabase, testLogger } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

const SKEW_MS = 90_000;

/** A Baton on `db` whose host clock runs `skewMs` ahead, and the warn+ lines it logged. */
async function skewedBaton(db: { url: string }, skewMs = SKEW_MS): Promise<{ baton: Baton; logs: Array<Record<string, unknown>> }> {
  const url = new URL(db.url);
  const schema = url.searchParams.get('schema')!;
  url.searchParams.delete('schema');
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  const store = new PostgresStore(url.toString(), { schema, hostClock: { now: () => Date.now() + skewMs } });
  return { baton: await openBaton({ store, logger }), logs };
}

describe('a host whose clock is 90 s ahead of the database', () => {
  it('measures its offset at open, takes the database time as its clock, and logs one warning', async () => {
    const db = tempDatabase();
    await openBaton({ database: db.url }); // migrated by a host with the right time
    const { baton, logs } = await skewedBaton(db);
    const now = Date.now();
    expect(Math.abs(baton.clock.now() - now)).toBeLessThan(250);
    const warnings = logs.filter((l) => l.component === 'clock');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40 });
    expect(Math.abs((warnings[0]!.offsetMs as number) + SKEW_MS)).toBeLessThan(250);
    expect(warnings[0]!.msg).toMatch(/ahead of the database's/);
    // A re-measure agrees and does not warn again.
    const reading = await baton.store.clockSync();
    expect(Math.abs(reading.offsetMs + SKEW_MS)).toBeLessThan(250);
  });

  it('a host in time logs no clock warning', async () => {
    const db = tempDatabase();
    await openBaton({ database: db.url });
    const { baton, logs } = await skewedBaton(db, 0);
    expect(Math.abs(baton.clock.now() - Date.now())).toBeLessThan(250);
    expect(logs.filter((l) => l.component === 'clock')).toEqual([]);
  });

  it('does not start a delayed job before its runAt by the database clock', async () => {
    const db = tempDatabase();
    const client = await openBaton({ database: db.url, logger: testLogger() });
    const { baton: skewed } = await skewedBaton(db);
    const started: number[] = [];
    const stamp = defineTask('stamp', { handler: async () => void started.push(Date.now()) });
    const worker = skewed.worker({ tasks: [stamp], pollInterval: 50 });
    await worker.start();
    const job = await client.enqueue(stamp, undefined, { delay: 1500 });
    const done = await waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    // Without the offset the skewed worker saw the job as due 88.5 s ago and ran it at once.
    expect(started).toHaveLength(1);
    expect(started[0]!).toBeGreaterThanOrEqual(job.runAt.getTime() - 50);
    expect(done.job.startedAt!.getTime()).toBeGreaterThanOrEqual(job.runAt.getTime());
  });

  it("does not rescue another host's running job whose lease is healthy", async () => {
    const db = tempDatabase();
    const healthy = await openBaton({ database: db.url, logger: testLogger() });
    const { baton: skewed } = await skewedBaton(db);
    let release = () => undefined as void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = defineTask('held', { handler: async () => gate });
    const worker = healthy.worker({ tasks: [held], leaseTtl: 30_000 });
    await worker.start();
    const job = await healthy.enqueue(held, undefined);
    await waitForEvent(worker, 'job:claimed', (e) => e.job.id === job.id);

    // The skewed host's rescuer pass, as its worker would run it: by its own clock
    // the 30 s lease ran out 60 s ago; by the database's it has 30 s left.
    const rescuer = new Rescuer({
      store: skewed.store,
      clock: skewed.clock,
      logger: testLogger(),
      intervalMs: 60_000,
      onRescued: () => undefined,
      onError: () => undefined,
    });
    expect(await rescuer.runOnce()).toEqual({ requeued: [], failed: [], cancelled: [] });
    expect(await skewed.getJob(job.id)).toMatchObject({ state: 'running', attempt: 1, errors: [] });

    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    release();
    await completed;
    expect(await healthy.getJob(job.id)).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
  });
});
