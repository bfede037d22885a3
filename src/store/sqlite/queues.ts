import type { QueueCount, StoreParams, ThroughputRow } from '../store.js';
import type { SqliteContext } from './context.js';

/** Per-queue figures on SQLite: job counts by state and finished jobs per minute. */

export async function queueCounts(ctx: SqliteContext, { queuePrefix }: StoreParams<'queueCounts'>): Promise<QueueCount[]> {
  return ctx.sql(`SELECT queue, state, count(*) AS count FROM jobs
    WHERE @prefix IS NULL OR substr(queue, 1, length(@prefix)) = @prefix
    GROUP BY queue, state ORDER BY queue, state`).all({ prefix: queuePrefix ?? null }) as QueueCount[];
}

export async function queueThroughput(ctx: SqliteContext, { since }: StoreParams<'queueThroughput'>): Promise<ThroughputRow[]> {
  return ctx.sql(`SELECT queue, (finished_at / 60000) * 60000 AS minute,
      sum(state = 'completed') AS completed, sum(state = 'failed') AS failed
    FROM jobs WHERE finished_at >= ? AND state IN ('completed', 'failed')
    GROUP BY queue, minute ORDER BY minute, queue`).all(since) as ThroughputRow[];
}
