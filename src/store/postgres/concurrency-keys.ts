import type { ConcurrencyKeyStat, StoreParams } from '../store.js';
import type { PgContext } from './context.js';

/**
 * Concurrency keys on PostgreSQL; see the Store interface. Queued counts and limits come
 * from `concurrency_keys` (migrations 12 and 16), running counts from the running jobs
 * themselves (index `jobs_running`), as the claim counts them; a key with running jobs and
 * none queued has no row, and its limit is its newest running job's.
 */
export async function concurrencyKeyList(ctx: PgContext, { queue, limit }: StoreParams<'concurrencyKeyList'>): Promise<ConcurrencyKeyStat[]> {
  return ctx.query<ConcurrencyKeyStat>(null, `
    WITH running AS (
      SELECT queue, concurrency_key AS key, count(*)::integer AS running, (array_agg(concurrency_limit ORDER BY id DESC))[1] AS max_running
      FROM :schema.jobs WHERE state = 'running' AND concurrency_key IS NOT NULL AND ($1::text IS NULL OR queue = $1) GROUP BY 1, 2
    ), queued AS (
      SELECT queue, key, queued, max_running FROM :schema.concurrency_keys WHERE $1::text IS NULL OR queue = $1
    )
    SELECT coalesce(q.queue, r.queue) AS queue, coalesce(q.key, r.key) AS key, coalesce(q.queued, 0) AS queued,
      coalesce(r.running, 0) AS running, CASE WHEN q.key IS NULL THEN r.max_running ELSE q.max_running END AS "limit"
    FROM queued q FULL JOIN running r ON r.queue = q.queue AND r.key = q.key
    ORDER BY 4 DESC, 3 DESC, 1, 2 LIMIT $2`, [queue ?? null, limit]);
}
