import type { QueueLimit, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';

/**
 * Queue concurrency limits on PostgreSQL (`queues.concurrency`, migration 0011: raising
 * or clearing a limit NOTIFYs `<schema>_jobs`); see the Store interface.
 */

export async function queueSetConcurrency(ctx: PgContext, { name, concurrency, now }: StoreParams<'queueSetConcurrency'>): Promise<boolean> {
  // Clearing touches only a row that has a limit; setting creates the row when missing.
  const text = concurrency === null
    ? 'UPDATE :schema.queues SET concurrency = NULL, updated_at = $3 WHERE name = $1 AND concurrency IS NOT NULL AND $2::integer IS NULL RETURNING name'
    : `INSERT INTO :schema.queues (name, concurrency, updated_at) VALUES ($1, $2, $3)
        ON CONFLICT (name) DO UPDATE SET concurrency = $2, updated_at = $3 WHERE queues.concurrency IS DISTINCT FROM $2 RETURNING name`;
  return (await ctx.query(null, text, [name, concurrency, date(now)])).length === 1;
}

export async function queueListLimits(ctx: PgContext): Promise<QueueLimit[]> {
  const rows = await ctx.query<{ queue: string; concurrency: number; running: number }>(null, `
    SELECT q.name AS queue, q.concurrency,
      (SELECT count(*) FROM :schema.jobs j WHERE j.state = 'running' AND j.queue = q.name)::integer AS running
    FROM :schema.queues q WHERE q.concurrency IS NOT NULL ORDER BY q.name`);
  return rows;
}
