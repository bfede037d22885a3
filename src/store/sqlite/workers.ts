import type { StoreParams, WorkerRecord } from '../store.js';
import type { SqliteContext } from './context.js';
import { rowToWorker, type WorkerRow } from './rows.js';

/** The worker registry on SQLite (`queues`, `tasks` and `running` stored as JSON text). */

export async function workerUpsert(ctx: SqliteContext, { worker, ttlMs, now }: StoreParams<'workerUpsert'>): Promise<void> {
  ctx.sql(`INSERT INTO workers (id, host, pid, started_at, last_heartbeat_at, expires_at, concurrency, queues, tasks, running)
    VALUES (@id, @host, @pid, @startedAt, @now, @expires, @concurrency, @queues, @tasks, @running)
    ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, expires_at = excluded.expires_at,
      concurrency = excluded.concurrency, queues = excluded.queues, tasks = excluded.tasks, running = excluded.running`).run({
    ...worker,
    now,
    expires: now + ttlMs,
    queues: JSON.stringify(worker.queues),
    tasks: worker.tasks === null ? null : JSON.stringify(worker.tasks),
    running: JSON.stringify(worker.running),
  });
}

export async function workerDelete(ctx: SqliteContext, { id }: StoreParams<'workerDelete'>): Promise<boolean> {
  return ctx.sql('DELETE FROM workers WHERE id = ?').run(id).changes === 1;
}

export async function workerList(ctx: SqliteContext, { now }: StoreParams<'workerList'>): Promise<WorkerRecord[]> {
  return (ctx.sql('SELECT * FROM workers WHERE expires_at > ? ORDER BY id').all(now) as WorkerRow[]).map(rowToWorker);
}
