import type { ConcurrencyKeyStat, StoreParams } from '../store.js';
import type { PgContext } from './context.js';

/** Concurrency keys on PostgreSQL (`concurrency_keys`, migration 0012); see the Store interface. */

export async function concurrencyKeyList(ctx: PgContext, { queue, limit }: StoreParams<'concurrencyKeyList'>): Promise<ConcurrencyKeyStat[]> {
  return ctx.query<ConcurrencyKeyStat>(null, `SELECT queue, key, queued, running, max_running AS "limit" FROM :schema.concurrency_keys
    WHERE $1::text IS NULL OR queue = $1 ORDER BY running DESC, queued DESC, queue, key LIMIT $2`, [queue ?? null, limit]);
}
