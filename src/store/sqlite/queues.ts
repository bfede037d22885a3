import type { QueueCount, QueueOldestDue, StoreParams, ThroughputRow, UnservedTask } from '../store.js';
import type { SqliteContext } from './context.js';

/** Per-queue figures on SQLite: job counts by state, finished jobs per minute, unserved tasks and the oldest due job. */

export async function queueCounts(ctx: SqliteContext, { queuePrefix }: StoreParams<'queueCounts'>): Promise<QueueCount[]> {
  return ctx.sql(`SELECT queue, state, count(*) AS count FROM jobs_all
    WHERE @prefix IS NULL OR substr(queue, 1, length(@prefix)) = @prefix
    GROUP BY queue, state ORDER BY queue, state`).all({ prefix: queuePrefix ?? null }) as QueueCount[];
}

export async function queueThroughput(ctx: SqliteContext, { since }: StoreParams<'queueThroughput'>): Promise<ThroughputRow[]> {
  return ctx.sql(`SELECT queue, (finished_at / 60000) * 60000 AS minute,
      sum(state = 'completed') AS completed, sum(state = 'failed') AS failed
    FROM jobs_finished WHERE finished_at >= ? AND state IN ('completed', 'failed')
    GROUP BY queue, minute ORDER BY minute, queue`).all(since) as ThroughputRow[];
}

export async function queueUnservedTasks(ctx: SqliteContext, { now }: StoreParams<'queueUnservedTasks'>): Promise<UnservedTask[]> {
  return ctx.sql(`WITH due AS (
      SELECT queue, task, count(*) AS jobs FROM jobs WHERE state = 'queued' AND run_at <= @now GROUP BY queue, task
    )
    SELECT queue, task, jobs FROM due
    WHERE NOT EXISTS (
      SELECT 1 FROM workers w WHERE w.expires_at > @now
        AND EXISTS (SELECT 1 FROM json_each(w.queues) WHERE value = due.queue)
        AND (w.tasks IS NULL OR EXISTS (SELECT 1 FROM json_each(w.tasks) WHERE value = due.task)))
    ORDER BY queue, task`).all({ now }) as UnservedTask[];
}

/**
 * Loose index scans: `plain` visits each distinct (queue, priority) of unkeyed queued jobs
 * in jobs_claim, `keyed` each (queue, key, priority) in jobs_claim_keyed, one probe each;
 * the first run_at of each such group (the index's next column) is its oldest, and the
 * oldest of those at or before now is the queue's oldest due job.
 */
export async function queueOldestDue(ctx: SqliteContext, { now }: StoreParams<'queueOldestDue'>): Promise<QueueOldestDue[]> {
  return ctx.sql(`WITH RECURSIVE
    plain(queue, priority) AS (
      SELECT queue, priority FROM (SELECT queue, priority FROM jobs INDEXED BY jobs_claim
        WHERE state = 'queued' AND concurrency_key IS NULL ORDER BY queue, priority LIMIT 1)
      UNION ALL
      SELECT j.queue, j.priority FROM plain p JOIN jobs j ON j.id = (SELECT id FROM jobs INDEXED BY jobs_claim
        WHERE state = 'queued' AND concurrency_key IS NULL AND (queue, priority) > (p.queue, p.priority) ORDER BY queue, priority LIMIT 1)
    ),
    keyed(queue, key, priority) AS (
      SELECT queue, concurrency_key, priority FROM (SELECT queue, concurrency_key, priority FROM jobs INDEXED BY jobs_claim_keyed
        WHERE state = 'queued' AND concurrency_key IS NOT NULL ORDER BY queue, concurrency_key, priority LIMIT 1)
      UNION ALL
      SELECT j.queue, j.concurrency_key, j.priority FROM keyed k JOIN jobs j ON j.id = (SELECT id FROM jobs INDEXED BY jobs_claim_keyed
        WHERE state = 'queued' AND concurrency_key IS NOT NULL AND (queue, concurrency_key, priority) > (k.queue, k.key, k.priority)
        ORDER BY queue, concurrency_key, priority LIMIT 1)
    ),
    heads(queue, run_at) AS (
      SELECT queue, (SELECT run_at FROM jobs INDEXED BY jobs_claim WHERE state = 'queued' AND concurrency_key IS NULL
        AND queue = p.queue AND priority = p.priority ORDER BY run_at LIMIT 1) FROM plain p
      UNION ALL
      SELECT queue, (SELECT run_at FROM jobs INDEXED BY jobs_claim_keyed WHERE state = 'queued' AND concurrency_key IS NOT NULL
        AND queue = k.queue AND concurrency_key = k.key AND priority = k.priority ORDER BY run_at LIMIT 1) FROM keyed k
    )
    SELECT queue, min(run_at) AS runAt FROM heads WHERE run_at <= @now GROUP BY queue ORDER BY queue`).all({ now }) as QueueOldestDue[];
}
