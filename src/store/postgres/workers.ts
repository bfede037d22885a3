import type { StoreParams, WorkerRecord } from '../store.js';
import { date, type PgContext } from './context.js';
import { rowToWorker, type WorkerRow } from './rows.js';

/** The worker registry on PostgreSQL (`queues` and `tasks` text[], `running` bigint[]). */

export async function workerUpsert(ctx: PgContext, { worker, ttlMs, now }: StoreParams<'workerUpsert'>): Promise<void> {
  await ctx.query(null, `
    INSERT INTO :schema.workers (id, host, pid, started_at, last_heartbeat_at, expires_at, concurrency, queues, tasks, running)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, expires_at = excluded.expires_at,
      concurrency = excluded.concurrency, queues = excluded.queues, tasks = excluded.tasks, running = excluded.running`,
  [worker.id, worker.host, worker.pid, date(worker.startedAt), date(now), date(now + ttlMs), worker.concurrency, worker.queues, worker.tasks, worker.running]);
}

export async function workerDelete(ctx: PgContext, { id }: StoreParams<'workerDelete'>): Promise<boolean> {
  return (await ctx.query(null, 'DELETE FROM :schema.workers WHERE id = $1 RETURNING id', [id])).length === 1;
}

export async function workerList(ctx: PgContext, { now }: StoreParams<'workerList'>): Promise<WorkerRecord[]> {
  return (await ctx.query<WorkerRow>(null, 'SELECT * FROM :schema.workers WHERE expires_at > $1 ORDER BY id', [date(now)])).map(rowToWorker);
}
