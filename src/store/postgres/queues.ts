import type { QueueCount, QueueOldestDue, StoreParams, ThroughputRow, UnservedTask } from '../store.js';
import { date, type PgContext } from './context.js';

/** Per-queue figures on PostgreSQL: job counts by state, finished jobs per minute, unserved tasks and the oldest due job. */

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

export async function queueUnservedTasks(ctx: PgContext, { now }: StoreParams<'queueUnservedTasks'>): Promise<UnservedTask[]> {
  const rows = await ctx.query<{ queue: string; task: string; jobs: string }>('queue_unserved', `
    WITH due AS (
      SELECT queue, task, count(*) AS jobs FROM :schema.jobs WHERE state = 'queued' AND run_at <= $1 GROUP BY queue, task
    )
    SELECT queue, task, jobs FROM due d
    WHERE NOT EXISTS (
      SELECT 1 FROM :schema.workers w WHERE w.expires_at > $1 AND d.queue = ANY (w.queues) AND (w.tasks IS NULL OR d.task = ANY (w.tasks)))
    ORDER BY queue, task`, [date(now)]);
  return rows.map((r) => ({ queue: r.queue, task: r.task, jobs: Number(r.jobs) }));
}

/**
 * Loose index scans: `plain` visits each distinct (queue, priority) of unkeyed queued jobs
 * in jobs_claim, `keyed` each (queue, key, priority) in jobs_claim_keyed, one probe each;
 * the first run_at of each such group (the index's next column) is its oldest, and the
 * oldest of those at or before now is the queue's oldest due job.
 */
export async function queueOldestDue(ctx: PgContext, { now }: StoreParams<'queueOldestDue'>): Promise<QueueOldestDue[]> {
  const rows = await ctx.query<{ queue: string; run_at: Date }>('queue_oldest_due', `
    WITH RECURSIVE
    plain(queue, priority) AS (
      (SELECT queue, priority FROM :schema.jobs WHERE state = 'queued' AND concurrency_key IS NULL ORDER BY queue, priority LIMIT 1)
      UNION ALL
      SELECT n.queue, n.priority FROM plain p, LATERAL (SELECT queue, priority FROM :schema.jobs
        WHERE state = 'queued' AND concurrency_key IS NULL AND (queue, priority) > (p.queue, p.priority) ORDER BY queue, priority LIMIT 1) n
    ),
    keyed(queue, key, priority) AS (
      (SELECT queue, concurrency_key, priority FROM :schema.jobs WHERE state = 'queued' AND concurrency_key IS NOT NULL
        ORDER BY queue, concurrency_key, priority LIMIT 1)
      UNION ALL
      SELECT n.queue, n.concurrency_key, n.priority FROM keyed k, LATERAL (SELECT queue, concurrency_key, priority FROM :schema.jobs
        WHERE state = 'queued' AND concurrency_key IS NOT NULL AND (queue, concurrency_key, priority) > (k.queue, k.key, k.priority)
        ORDER BY queue, concurrency_key, priority LIMIT 1) n
    ),
    heads(queue, run_at) AS (
      SELECT p.queue, (SELECT run_at FROM :schema.jobs WHERE state = 'queued' AND concurrency_key IS NULL
        AND queue = p.queue AND priority = p.priority ORDER BY run_at LIMIT 1) FROM plain p
      UNION ALL
      SELECT k.queue, (SELECT run_at FROM :schema.jobs WHERE state = 'queued' AND concurrency_key IS NOT NULL
        AND queue = k.queue AND concurrency_key = k.key AND priority = k.priority ORDER BY run_at LIMIT 1) FROM keyed k
    )
    SELECT queue, min(run_at) AS run_at FROM heads WHERE run_at <= $1 GROUP BY queue ORDER BY queue`, [date(now)]);
  return rows.map((r) => ({ queue: r.queue, runAt: r.run_at.getTime() }));
}
