import type { QueueRateLimit, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';

/**
 * Queue rate limits on SQLite (`queues.rate_limit` / `key_rate_limit` and the log of
 * starts `rate_limit_starts`, migration 0013); see the Store interface.
 */

/** The columns of each scope (the queue's starts together, or each key's apart): in force, override mark (migration 0020), declared. */
const COLUMNS = { queue: ['rate_limit', 'rate_period_ms', 'rate_override', 'declared_rate_limit'], key: ['key_rate_limit', 'key_rate_period_ms', 'key_rate_override', 'declared_key_rate_limit'] } as const;

export async function queueSetRateLimit(ctx: SqliteContext, { name, perKey, rate, now }: StoreParams<'queueSetRateLimit'>): Promise<boolean> {
  const [limit, period, override, declared] = COLUMNS[perKey ? 'key' : 'queue'];
  // An override of the declared rate, as queueSetConcurrency's limit (queue-limits.ts).
  const statement = rate === null
    ? ctx.sql(`UPDATE queues SET ${limit} = NULL, ${period} = NULL, ${override} = ${declared} IS NOT NULL, updated_at = @now
        WHERE name = @name AND (${limit} IS NOT NULL OR ${override} IS NOT (${declared} IS NOT NULL))`)
    : ctx.sql(`INSERT INTO queues (name, ${limit}, ${period}, ${override}, updated_at) VALUES (@name, @limit, @period, 1, @now)
        ON CONFLICT (name) DO UPDATE SET ${limit} = @limit, ${period} = @period, ${override} = 1, updated_at = @now
        WHERE queues.${limit} IS NOT @limit OR queues.${period} IS NOT @period OR queues.${override} = 0`);
  return statement.run({ name, now, ...(rate === null ? {} : { limit: rate.limit, period: rate.periodMs }) }).changes === 1;
}

export async function queueListRateLimits(ctx: SqliteContext, { now, queues }: StoreParams<'queueListRateLimits'>): Promise<QueueRateLimit[]> {
  const rows = ctx.sql(`
    SELECT queue, per_key, "limit", period_ms, used, next_at FROM (
      SELECT q.name AS queue, 0 AS per_key, q.rate_limit AS "limit", q.rate_period_ms AS period_ms, w.used,
        CASE WHEN w.used >= q.rate_limit THEN w.first + q.rate_period_ms END AS next_at
      FROM queues q JOIN (
        SELECT q2.name AS queue, count(s.started_at) AS used, min(s.started_at) AS first FROM queues q2
        LEFT JOIN rate_limit_starts s INDEXED BY rate_limit_starts_queue ON s.queue = q2.name AND s.started_at > @now - q2.rate_period_ms
        WHERE q2.rate_limit IS NOT NULL GROUP BY q2.name
      ) w ON w.queue = q.name
      UNION ALL
      SELECT q.name, 1, q.key_rate_limit, q.key_rate_period_ms, coalesce(max(g.used), 0),
        min(CASE WHEN g.used >= q.key_rate_limit THEN g.first END) + q.key_rate_period_ms
      FROM queues q LEFT JOIN (
        SELECT s.queue, s.key, count(*) AS used, min(s.started_at) AS first FROM rate_limit_starts s INDEXED BY rate_limit_starts_key
        JOIN queues q3 ON q3.name = s.queue
        WHERE s.key IS NOT NULL AND q3.key_rate_limit IS NOT NULL AND s.started_at > @now - q3.key_rate_period_ms
        GROUP BY s.queue, s.key
      ) g ON g.queue = q.name
      WHERE q.key_rate_limit IS NOT NULL GROUP BY q.name
    ) WHERE @queues IS NULL OR queue IN (SELECT value FROM json_each(@queues))
    ORDER BY queue, per_key`).all({ now, queues: queues === undefined ? null : JSON.stringify(queues) }) as Array<{
    queue: string; per_key: number; limit: number; period_ms: number; used: number; next_at: number | null;
  }>;
  return rows.map((r) => ({ queue: r.queue, perKey: r.per_key === 1, limit: r.limit, periodMs: r.period_ms, used: r.used, nextAt: r.next_at }));
}

export async function rateStartsPrune(ctx: SqliteContext, { now, limit }: StoreParams<'rateStartsPrune'>): Promise<number> {
  // A start is dead once no window of its queue reaches back to it (a queue without a rate: at once).
  return ctx.sql(`DELETE FROM rate_limit_starts WHERE rowid IN (
      SELECT s.rowid FROM rate_limit_starts s LEFT JOIN queues q ON q.name = s.queue
      WHERE s.started_at <= @now - max(coalesce(q.rate_period_ms, 0), coalesce(q.key_rate_period_ms, 0))
      LIMIT @limit)`).run({ now, limit }).changes;
}
