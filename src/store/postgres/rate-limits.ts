import type { QueueRateLimit, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';

/**
 * Queue rate limits on PostgreSQL (`queues.rate_limit` / `key_rate_limit` and the log of
 * starts `rate_limit_starts`, migration 0013; changing a rate NOTIFYs `<schema>_jobs`);
 * see the Store interface.
 */

/** The columns of each scope (the queue's starts together, or each key's apart): in force, override mark (migration 0020), declared. */
const COLUMNS = { queue: ['rate_limit', 'rate_period_ms', 'rate_override', 'declared_rate_limit'], key: ['key_rate_limit', 'key_rate_period_ms', 'key_rate_override', 'declared_key_rate_limit'] } as const;

export async function queueSetRateLimit(ctx: PgContext, { name, perKey, rate, now }: StoreParams<'queueSetRateLimit'>): Promise<boolean> {
  const [limit, period, override, declared] = COLUMNS[perKey ? 'key' : 'queue'];
  // An override of the declared rate, as queueSetConcurrency's limit (queue-limits.ts).
  const text = rate === null
    ? `UPDATE :schema.queues SET ${limit} = NULL, ${period} = NULL, ${override} = ${declared} IS NOT NULL, updated_at = $4
        WHERE name = $1 AND (${limit} IS NOT NULL OR ${override} IS DISTINCT FROM (${declared} IS NOT NULL))
        AND $2::integer IS NULL AND $3::integer IS NULL RETURNING name`
    : `INSERT INTO :schema.queues (name, ${limit}, ${period}, ${override}, updated_at) VALUES ($1, $2, $3, true, $4)
        ON CONFLICT (name) DO UPDATE SET ${limit} = $2, ${period} = $3, ${override} = true, updated_at = $4
        WHERE queues.${limit} IS DISTINCT FROM $2 OR queues.${period} IS DISTINCT FROM $3 OR NOT queues.${override} RETURNING name`;
  return (await ctx.query(null, text, [name, rate?.limit ?? null, rate?.periodMs ?? null, date(now)])).length === 1;
}

export async function queueListRateLimits(ctx: PgContext, { now, queues }: StoreParams<'queueListRateLimits'>): Promise<QueueRateLimit[]> {
  const rows = await ctx.query<{ queue: string; per_key: boolean; limit: number; period_ms: number; used: number; next_at: Date | null }>(null, `
    SELECT q.name AS queue, false AS per_key, q.rate_limit AS "limit", q.rate_period_ms AS period_ms, w.used,
      CASE WHEN w.used >= q.rate_limit THEN w.first + q.rate_period_ms * interval '1 millisecond' END AS next_at
    FROM :schema.queues q CROSS JOIN LATERAL (
      SELECT count(*)::integer AS used, min(s.started_at) AS first FROM :schema.rate_limit_starts s
      WHERE s.queue = q.name AND s.started_at > $1::timestamptz - q.rate_period_ms * interval '1 millisecond'
    ) w
    WHERE q.rate_limit IS NOT NULL AND ($2::text[] IS NULL OR q.name = ANY($2))
    UNION ALL
    SELECT q.name, true, q.key_rate_limit, q.key_rate_period_ms, coalesce(max(g.used), 0)::integer,
      min(g.first) FILTER (WHERE g.used >= q.key_rate_limit) + q.key_rate_period_ms * interval '1 millisecond'
    FROM :schema.queues q LEFT JOIN LATERAL (
      SELECT count(*) AS used, min(s.started_at) AS first FROM :schema.rate_limit_starts s
      WHERE s.queue = q.name AND s.key IS NOT NULL AND s.started_at > $1::timestamptz - q.key_rate_period_ms * interval '1 millisecond'
      GROUP BY s.key
    ) g ON true
    WHERE q.key_rate_limit IS NOT NULL AND ($2::text[] IS NULL OR q.name = ANY($2))
    GROUP BY q.name, q.key_rate_limit, q.key_rate_period_ms
    ORDER BY queue, per_key`, [date(now), queues ?? null]);
  return rows.map((r) => ({ queue: r.queue, perKey: r.per_key, limit: r.limit, periodMs: r.period_ms, used: r.used, nextAt: r.next_at?.getTime() ?? null }));
}

export async function rateStartsPrune(ctx: PgContext, { now, limit }: StoreParams<'rateStartsPrune'>): Promise<number> {
  // A start is dead once no window of its queue reaches back to it (a queue without a
  // rate: at once). By ctid, in a batch of `limit`, so no statement holds many rows.
  const rows = await ctx.query(null, `DELETE FROM :schema.rate_limit_starts d WHERE d.ctid = ANY(ARRAY(
      SELECT s.ctid FROM :schema.rate_limit_starts s LEFT JOIN :schema.queues q ON q.name = s.queue
      WHERE s.started_at <= $1::timestamptz - greatest(coalesce(q.rate_period_ms, 0), coalesce(q.key_rate_period_ms, 0)) * interval '1 millisecond'
      LIMIT $2))
    RETURNING 1`, [date(now), limit]);
  return rows.length;
}
