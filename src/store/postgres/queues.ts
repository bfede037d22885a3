import type { QueueCount, StoreParams, ThroughputRow } from '../store.js';
import { date, type PgContext } from './context.js';

/** Per-queue figures on PostgreSQL: job counts by state and finished jobs per minute. */

export async function queueCounts(ctx: PgContext, { queuePrefix }: StoreParams<'queueCounts'>): Promise<QueueCount[]> {
  const rows = await ctx.query<{ queue: string; state: QueueCount['state']; count: string }>('queue_counts', `
    SELECT queue, state, count(*) AS count FROM :schema.jobs_all
    WHERE $1::text IS NULL OR left(queue, length($1)) = $1
    GROUP BY queue, state ORDER BY queue, state`, [queuePrefix ?? null]);
  return rows.map((r) => ({ queue: r.queue, state: r.state, count: Number(r.count) }));
}

export async function queueThroughput(ctx: PgContext, { since }: StoreParams<'queueThroughput'>): Promise<ThroughputRow[]> {
  const rows = await ctx.query<{ queue: string; minute: string; completed: string; failed: string }>(null, `
    SELECT queue, (floor(extract(epoch FROM finished_at) / 60) * 60000)::bigint AS minute,
      count(*) FILTER (WHERE state = 'completed') AS completed, count(*) FILTER (WHERE state = 'failed') AS failed
    FROM :schema.jobs_finished WHERE finished_at >= $1 AND state IN ('completed', 'failed')
    GROUP BY 1, 2 ORDER BY 2, 1`, [date(since)]);
  return rows.map((r) => ({ queue: r.queue, minute: Number(r.minute), completed: Number(r.completed), failed: Number(r.failed) }));
}
