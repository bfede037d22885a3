import type { QueueLimit, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';

/** Queue concurrency limits on SQLite (`queues.concurrency`, migration 0011); see the Store interface. */

export async function queueSetConcurrency(ctx: SqliteContext, { name, concurrency, now }: StoreParams<'queueSetConcurrency'>): Promise<boolean> {
  // Clearing touches only a row that has a limit; setting creates the row when missing.
  const statement = concurrency === null
    ? ctx.sql('UPDATE queues SET concurrency = NULL, updated_at = @now WHERE name = @name AND concurrency IS NOT NULL')
    : ctx.sql(`INSERT INTO queues (name, concurrency, updated_at) VALUES (@name, @concurrency, @now)
        ON CONFLICT (name) DO UPDATE SET concurrency = @concurrency, updated_at = @now WHERE queues.concurrency IS NOT @concurrency`);
  return statement.run({ name, concurrency, now }).changes === 1;
}

export async function queueListLimits(ctx: SqliteContext): Promise<QueueLimit[]> {
  return ctx.sql(`SELECT name AS queue, concurrency,
      (SELECT count(*) FROM jobs INDEXED BY jobs_running_queue WHERE state = 'running' AND jobs.queue = queues.name) AS running
    FROM queues WHERE concurrency IS NOT NULL ORDER BY name`).all() as QueueLimit[];
}
