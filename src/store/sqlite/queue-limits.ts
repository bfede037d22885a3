import type { QueueLimit, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';

/** Queue concurrency limits on SQLite (`queues.concurrency`, migration 0011); see the Store interface. */

export async function queueSetConcurrency(ctx: SqliteContext, { name, concurrency, now }: StoreParams<'queueSetConcurrency'>): Promise<boolean> {
  // A limit is an override of the declared one (migration 0020); clearing is one only
  // against a declared limit, and touches only a row it changes. Setting creates the row when missing.
  const statement = concurrency === null
    ? ctx.sql(`UPDATE queues SET concurrency = NULL, concurrency_override = declared_concurrency IS NOT NULL, updated_at = @now
        WHERE name = @name AND (concurrency IS NOT NULL OR concurrency_override IS NOT (declared_concurrency IS NOT NULL))`)
    : ctx.sql(`INSERT INTO queues (name, concurrency, concurrency_override, updated_at) VALUES (@name, @concurrency, 1, @now)
        ON CONFLICT (name) DO UPDATE SET concurrency = @concurrency, concurrency_override = 1, updated_at = @now
        WHERE queues.concurrency IS NOT @concurrency OR queues.concurrency_override = 0`);
  return statement.run({ name, concurrency, now }).changes === 1;
}

export async function queueListLimits(ctx: SqliteContext): Promise<QueueLimit[]> {
  return ctx.sql(`SELECT name AS queue, concurrency,
      (SELECT count(*) FROM jobs INDEXED BY jobs_running_queue WHERE state = 'running' AND jobs.queue = queues.name) AS running
    FROM queues WHERE concurrency IS NOT NULL ORDER BY name`).all() as QueueLimit[];
}
