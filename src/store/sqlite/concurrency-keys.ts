import type { ConcurrencyKeyStat, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';

/** Concurrency keys on SQLite (`concurrency_keys`, migration 0012); see the Store interface. */

export async function concurrencyKeyList(ctx: SqliteContext, { queue, limit }: StoreParams<'concurrencyKeyList'>): Promise<ConcurrencyKeyStat[]> {
  return ctx.sql(`SELECT queue, key, queued, running, max_running AS "limit" FROM concurrency_keys
    WHERE @queue IS NULL OR queue = @queue ORDER BY running DESC, queued DESC, queue, key LIMIT @limit`).all({ queue: queue ?? null, limit }) as ConcurrencyKeyStat[];
}
