/**
 * SQLite keeps finished jobs in a table of their own (`jobs_finished`, migration 25), as
 * PostgreSQL does: `jobs` holds only queued and running jobs. The conformance suite
 * checks what every operation answers; this checks where the rows are, what the
 * triggers keep (key counts, steps), the schedule tick's uniqueness across both tables,
 * and a database at version 24 holding finished jobs migrating to 25.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { migrations } from '../../src/store/sqlite/migrations/index.js';
import { tempDatabase } from '../helpers/db.js';
import { tableJob, rowsByTable } from '../helpers/job-tables.js';
import { rawQuery } from '../helpers/raw.js';

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

async function openStore(db: ReturnType<typeof tempDatabase>, list = migrations): Promise<SqliteStore> {
  const store = new SqliteStore(db.path, { migrations: list });
  stores.push(store);
  await store.migrate();
  return store;
}

const job = tableJob;
const where = rowsByTable;

const claimAll = (store: SqliteStore, now: number) => store.jobClaim({ workerId: 'w', tasks: ['t'], queues: ['default'], limit: 10, leaseMs: 60_000, now });

describe('finished jobs in jobs_finished (SQLite)', () => {
  it('jobs and jobs_finished have the same columns, in order', async () => {
    const db = tempDatabase();
    await openStore(db);
    const columns = async (table: string) => (await rawQuery<{ name: string }>(db, `SELECT name FROM pragma_table_info('${table}')`)).map((c) => c.name);
    expect(await columns('jobs_finished')).toEqual(await columns('jobs'));
    expect(await columns('jobs_all')).toEqual(await columns('jobs'));
  });

  it('every way a job ends moves it out of jobs, and a retry moves it back, with its steps', async () => {
    const db = tempDatabase();
    const store = await openStore(db);
    const now = Date.now();
    const inserted = await store.jobInsertMany({ jobs: [1, 2, 3, 4, 5, 6, 7].map((n) => job(n)), now });
    const [completed, failed, cancelledRunning, released, rescued, cancelledQueued, requeued] = inserted.map((i) => i.job.id) as number[];
    await store.jobCancel({ id: cancelledQueued!, reason: 'queued cancel', now });
    const claimed = await claimAll(store, now);
    expect(claimed).toHaveLength(6);
    const token = (id: number) => claimed.find((c) => c.id === id)!.leaseToken;
    const step = { name: 's', seq: 1, state: 'completed' as const, attempt: 1, tries: 1, startedAt: now, finishedAt: now, result: '1', error: null };
    expect(await store.jobStepSave({ id: failed!, token: token(failed!), step })).toBe(true);
    expect((await store.jobCompleteMany({ items: [{ id: completed!, token: token(completed!), result: '"ok"' }], now })).completed).toEqual([completed]);
    expect(await store.jobFail({ id: failed!, token: token(failed!), error: { attempt: 1, time: now, message: 'boom', stack: null }, retryAt: null, now })).toBe(true);
    await store.jobCancel({ id: cancelledRunning!, reason: 'running cancel', now });
    expect(await store.jobFinishCancelled({ id: cancelledRunning!, token: token(cancelledRunning!), now })).toBe(true);
    await store.jobCancel({ id: released!, reason: 'cancel before the release', now });
    expect((await store.jobRelease({ leases: [{ id: released!, token: token(released!) }, { id: requeued!, token: token(requeued!) }], now })).sort()).toEqual([released, requeued].sort());
    expect(await store.jobRescueExpired({ now: now + 120_000 })).toEqual({ requeued: [], failed: [rescued], cancelled: [] });

    expect(await where(db)).toEqual({
      live: [`${requeued}:queued`],
      finished: [`${completed}:completed`, `${failed}:failed`, `${cancelledRunning}:cancelled`, `${released}:cancelled`, `${rescued}:failed`, `${cancelledQueued}:cancelled`],
    });
    expect((await store.jobGet({ id: completed! }))?.result).toBe('ok');
    expect((await store.jobList({ limit: 10 })).map((j) => j.id)).toEqual([...inserted.map((i) => i.job.id)].reverse());
    expect((await store.jobList({ limit: 10, state: 'failed' })).map((j) => j.id)).toEqual([rescued, failed]);
    expect(await store.jobStepList({ id: failed! })).toHaveLength(1);

    expect((await store.jobRetry({ id: failed!, now }))?.retried).toBe(true);
    expect(await store.jobRetryMany({ ids: [rescued!, cancelledQueued!], now })).toEqual([rescued, cancelledQueued].sort((a, b) => a! - b!));
    expect((await where(db)).live).toEqual([`${failed}:queued`, `${rescued}:queued`, `${cancelledQueued}:queued`, `${requeued}:queued`]);
    // The retry kept the step log (not fresh); deleting a finished job deletes its steps.
    expect(await store.jobStepList({ id: failed! })).toHaveLength(1);
    expect(await store.jobDelete({ id: completed! })).toEqual({ state: 'completed', deleted: true });
    expect(await rawQuery(db, 'SELECT count(*) AS n FROM jobs_all WHERE id = ?', [completed])).toEqual([{ n: 0 }]);
  });

  it('a concurrency key counts its live jobs through claims, completions, cancels and retries; an ended key has no row', async () => {
    const db = tempDatabase();
    const store = await openStore(db);
    const now = Date.now();
    const keyed = (n: number) => job(n, { concurrencyKey: 'k', concurrencyLimit: 5 });
    const [a, b, c] = (await store.jobInsertMany({ jobs: [keyed(1), keyed(2), keyed(3)], now })).map((i) => i.job.id) as number[];
    const counts = () => rawQuery<{ queued: number; running: number }>(db, 'SELECT queued, running FROM concurrency_keys');
    expect(await counts()).toEqual([{ queued: 3, running: 0 }]);
    const claimed = await claimAll(store, now);
    expect(await counts()).toEqual([{ queued: 0, running: 3 }]);
    const token = (id: number) => claimed.find((j) => j.id === id)!.leaseToken;
    await store.jobCompleteMany({ items: [{ id: a!, token: token(a!), result: 'null' }], now });
    expect(await store.jobFail({ id: b!, token: token(b!), error: { attempt: 1, time: now, message: 'boom', stack: null }, retryAt: null, now })).toBe(true);
    expect(await counts()).toEqual([{ queued: 0, running: 1 }]);
    expect((await store.jobRetry({ id: b!, now }))?.retried).toBe(true);
    expect(await counts()).toEqual([{ queued: 1, running: 1 }]);
    await store.jobCancel({ id: b!, reason: null, now });
    await store.jobCompleteMany({ items: [{ id: c!, token: token(c!), result: 'null' }], now });
    expect(await counts()).toEqual([]);
  });

  it("a schedule's tick is enqueued once, whether its job is live or finished", async () => {
    const db = tempDatabase();
    const store = await openStore(db);
    const now = Date.now();
    await rawQuery(db, `INSERT INTO schedules (name, every_ms, timezone, task, payload, queue, priority, max_attempts, catch_up, catch_up_limit, next_run_at, created_at, updated_at)
      VALUES ('s', 1000, 'UTC', 't', '{}', 'default', 0, 1, 'all', 10, ?, ?, ?)`, [now, now, now]);
    const tick = { queue: 'default', task: 't', payload: '{}', priority: 0, runAt: now, maxAttempts: 1, timeoutMs: null, key: null, scheduledFor: now };
    const first = await store.scheduleAdvance({ name: 's', expectedNextRunAt: now, nextRunAt: now + 1, jobs: [tick], workerId: 'w', now });
    expect(first.jobs).toHaveLength(1);
    const [claimed] = await claimAll(store, now);
    await store.jobCompleteMany({ items: [{ id: claimed!.id, token: claimed!.leaseToken, result: 'null' }], now });
    // The same tick again (a stale instance, a schedule reset by hand): refused by the finished job's row, as on PostgreSQL.
    const again = store.scheduleAdvance({ name: 's', expectedNextRunAt: now + 1, nextRunAt: now + 2, jobs: [tick], workerId: 'w', now });
    await expect(again).rejects.toThrow(/UNIQUE constraint failed: jobs_finished.schedule_name/);
    expect(await rawQuery(db, 'SELECT count(*) AS n FROM jobs_all WHERE scheduled_for = ?', [now])).toEqual([{ n: 1 }]);
  });

  it('a database at version 24 holding finished jobs migrates to 25: every job stays listed and readable, finished ones in jobs_finished', async () => {
    const db = tempDatabase();
    const old = await openStore(db, migrations.filter((m) => m.version === 24));
    const now = Date.now();
    const ids = (await old.jobInsertMany({ jobs: [1, 2, 3, 4].map((n) => job(n)), now })).map((i) => i.job.id) as number[];
    await old.close();
    stores.splice(stores.indexOf(old), 1);
    // Finished as the code of version 24 left them: in jobs.
    await rawQuery(db, `UPDATE jobs SET state = 'completed', result = '"ok"', finished_at = ? WHERE id = ?`, [now, ids[0]]);
    await rawQuery(db, `UPDATE jobs SET state = 'failed', errors = '[{"attempt":1,"time":0,"message":"boom","stack":null}]', finished_at = ? WHERE id = ?`, [now, ids[1]]);
    await rawQuery(db, `UPDATE jobs SET state = 'cancelled', cancel_reason = 'no', finished_at = ? WHERE id = ?`, [now, ids[3]]);

    const store = await openStore(db);
    expect(await rawQuery(db, 'SELECT version FROM baton_migrations ORDER BY version')).toEqual([{ version: 24 }, { version: 25 }]);
    expect(await where(db)).toEqual({ live: [`${ids[2]}:queued`], finished: [`${ids[0]}:completed`, `${ids[1]}:failed`, `${ids[3]}:cancelled`] });
    expect((await Promise.all(ids.map((id) => store.jobGet({ id })))).map((j) => [j?.id, j?.state, j?.result])).toEqual([
      [ids[0], 'completed', 'ok'], [ids[1], 'failed', null], [ids[2], 'queued', null], [ids[3], 'cancelled', null],
    ]);
    expect((await store.jobList({ limit: 10 })).map((j) => j.id)).toEqual([...ids].reverse());
    expect((await store.jobList({ limit: 10, state: 'failed' })).map((j) => j.lastError?.message.text)).toEqual(['boom']);
    expect((await store.jobRetry({ id: ids[1]!, now }))?.job.state).toBe('queued');
    // Ids keep growing past the moved rows.
    const [next] = await store.jobInsertMany({ jobs: [job(5)], now });
    expect(next!.job.id).toBeGreaterThan(Math.max(...ids));
  });
});
