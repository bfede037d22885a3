/**
 * PostgreSQL keeps finished jobs in a table of their own (`jobs_finished`, see the
 * baseline migration): `jobs` holds only queued and running jobs, so the hot path's
 * table and indexes stay the size of the live work however much history is kept. The
 * conformance suite checks what every operation answers; this checks where the rows
 * are, and that the column list the moves name matches both tables.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { JOB_COLUMNS } from '../../src/store/postgres/move.js';
import { tempDatabase } from '../helpers/db.js';
import { tableJob, rowsByTable } from '../helpers/job-tables.js';
import { rawQuery } from '../helpers/raw.js';

const stores: PostgresStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

async function openStore(db: ReturnType<typeof tempDatabase>, options: ConstructorParameters<typeof PostgresStore>[1] = {}): Promise<PostgresStore> {
  const store = new PostgresStore(db.url.replace(/[?&]schema=[^&]*/, ''), { schema: new URL(db.url).searchParams.get('schema')!, ...options });
  stores.push(store);
  await store.migrate();
  return store;
}

const job = tableJob;
const where = rowsByTable;

describe('finished jobs in jobs_finished (PostgreSQL)', () => {
  it('the column list of the moves is the columns of jobs, jobs_finished and jobs_all, in order', async () => {
    const db = tempDatabase();
    await openStore(db);
    const schema = new URL(db.url).searchParams.get('schema')!;
    for (const table of ['jobs', 'jobs_finished', 'jobs_all']) {
      const columns = await rawQuery<{ column_name: string }>(db, 'SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position', [schema, table]);
      expect(columns.map((c) => c.column_name), table).toEqual(Object.keys(JOB_COLUMNS));
    }
  });

  it('every way a job ends moves it out of jobs, and a retry moves it back; jobs never holds a finished row', async () => {
    const db = tempDatabase();
    const store = await openStore(db);
    const now = Date.now();
    const inserted = await store.jobInsertMany({ jobs: [1, 2, 3, 4, 5, 6, 7].map((n) => job(n)), now });
    const [completed, failed, cancelledRunning, released, rescued, cancelledQueued, requeued] = inserted.map((i) => i.job.id) as number[];
    await store.jobCancel({ id: cancelledQueued!, reason: 'queued cancel', now });
    const claimed = await store.jobClaim({ workerId: 'w', tasks: ['t'], queues: ['default'], limit: 10, leaseMs: 60_000, now });
    expect(claimed).toHaveLength(6);
    const token = (id: number) => claimed.find((c) => c.id === id)!.leaseToken;
    expect((await store.jobCompleteMany({ items: [{ id: completed!, token: token(completed!), result: '"ok"' }], now })).completed).toEqual([completed]);
    expect(await store.jobFail({ id: failed!, token: token(failed!), error: { attempt: 1, time: now, message: 'boom', stack: null }, retryAt: null, now })).toBe(true);
    await store.jobCancel({ id: cancelledRunning!, reason: 'running cancel', now });
    expect(await store.jobFinishCancelled({ id: cancelledRunning!, token: token(cancelledRunning!), now })).toBe(true);
    await store.jobCancel({ id: released!, reason: 'cancel before the release', now });
    expect((await store.jobRelease({ leases: [{ id: released!, token: token(released!) }, { id: requeued!, token: token(requeued!) }], now })).sort()).toEqual([released, requeued].sort());
    // The rescue: only `rescued` is still running with its lease; let it expire.
    const report = await store.jobRescueExpired({ now: now + 120_000 });
    expect(report).toEqual({ requeued: [], failed: [rescued], cancelled: [] });

    expect(await where(db)).toEqual({
      live: [`${requeued}:queued`],
      finished: [`${completed}:completed`, `${failed}:failed`, `${cancelledRunning}:cancelled`, `${released}:cancelled`, `${rescued}:failed`, `${cancelledQueued}:cancelled`],
    });
    expect((await store.jobGet({ id: completed! }))?.result).toBe('ok');
    expect((await store.jobList({ limit: 10 })).map((j) => j.id)).toEqual([...inserted.map((i) => i.job.id)].reverse());

    expect((await store.jobRetry({ id: failed!, now }))?.retried).toBe(true);
    expect(await store.jobRetryMany({ ids: [rescued!, cancelledQueued!], now })).toEqual([rescued, cancelledQueued].sort((a, b) => a! - b!));
    expect((await where(db)).live).toEqual([`${failed}:queued`, `${rescued}:queued`, `${cancelledQueued}:queued`, `${requeued}:queued`]);

    // A finished row written straight into jobs is refused by the table's CHECK.
    await expect(rawQuery(db, "UPDATE jobs SET state = 'completed' WHERE id = ?", [requeued])).rejects.toThrow(/jobs_live_state_check/);
  });
});
