import type { QueueLimit, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';

/**
 * Queue concurrency limits on PostgreSQL (`queues.concurrency`, migration 0011: raising
 * or clearing a limit NOTIFYs `<schema>_jobs`); see the Store interface.
 */

export async function queueSetConcurrency(ctx: PgContext, { name, concurrency, now }: StoreParams<'queueSetConcurrency'>): Promise<boolean> {
  // A limit is an override of the declared one (migration 0020); clearing is one only
  // against a declared limit, and touches only a row it changes. Setting creates the row when missing.
  const text = concurrency === null
    ? `UPDATE :schema.queues SET concurrency = NULL, concurrency_override = declared_concurrency IS NOT NULL, updated_at = $3
        WHERE name = $1 AND (concurrency IS NOT NULL OR concurrency_override IS DISTINCT FROM (declared_concurrency IS NOT NULL))
        AND $2::integer IS NULL RETURNING name`
    : `INSERT INTO :schema.queues (name, concurrency, concurrency_override, updated_at) VALUES ($1, $2, true, $3)
        ON CONFLICT (name) DO UPDATE SET concurrency = $2, concurrency_override = true, updated_at = $3
        WHERE queues.concurrency IS DISTINCT FROM $2 OR NOT queues.concurrency_override RETURNING name`;
  return (await ctx.query(null, text, [name, concurrency, date(now)])).length === 1;
}

export async function queueListLimits(ctx: PgContext): Promise<QueueLimit[]> {
  const rows = await ctx.query<{ queue: string; concurrency: number; running: number }>(null, `
    SELECT q.name AS queue, q.concurrency,
      (SELECT count(*) FROM :schema.jobs j WHERE j.state = 'running' AND j.queue = q.name)::integer AS running
    FROM :schema.queues q WHERE q.concurrency IS NOT NULL ORDER BY q.name`);
  return rows;
}
