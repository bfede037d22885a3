import type { QueueSettingsRecord, StoreParams } from '../store.js';
import { DECLARED_COLUMNS, IN_FORCE_COLUMNS, SETTING_COLUMNS, declareConflictClause, settingsRecord } from '../queue-settings.js';
import { date, type PgContext } from './context.js';

/**
 * Queues declared in code on PostgreSQL (`queues.declared_*` and `*_override`, migration
 * 0020); see the Store interface. One statement for every declared queue, rows taken in
 * name order, so processes that start at once and declare the same queues never
 * deadlock: the second waits for the first's row lock, then finds nothing to write.
 */

export async function queueDeclare(ctx: PgContext, { queues, now }: StoreParams<'queueDeclare'>): Promise<string[]> {
  const sorted = [...queues].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const column = (pick: (q: (typeof sorted)[number]) => number | null) => sorted.map(pick);
  const rows = await ctx.query<{ name: string }>(null, `
    INSERT INTO :schema.queues AS queues (name, declared_at, updated_at, ${DECLARED_COLUMNS.join(', ')}, ${IN_FORCE_COLUMNS.join(', ')})
    SELECT d.name, $1, $1, d.c, d.rl, d.rp, d.kl, d.kp, d.c, d.rl, d.rp, d.kl, d.kp
    FROM unnest($2::text[], $3::integer[], $4::integer[], $5::integer[], $6::integer[], $7::integer[]) AS d(name, c, rl, rp, kl, kp)
    ORDER BY d.name
    ${declareConflictClause('$1', { isNot: 'IS DISTINCT FROM', on: (flag) => flag })}
    RETURNING queues.name`, [
    date(now), sorted.map((q) => q.name), column((q) => q.concurrency),
    column((q) => q.rateLimit?.limit ?? null), column((q) => q.rateLimit?.periodMs ?? null),
    column((q) => q.keyRateLimit?.limit ?? null), column((q) => q.keyRateLimit?.periodMs ?? null),
  ]);
  return rows.map((r) => r.name).sort();
}

export async function queueClearOverride(ctx: PgContext, { name, setting, now }: StoreParams<'queueClearOverride'>): Promise<boolean> {
  const { flag, columns } = SETTING_COLUMNS[setting];
  const rows = await ctx.query(null, `UPDATE :schema.queues SET ${flag} = false, updated_at = $2, ${columns.map(([c, d]) => `${c} = ${d}`).join(', ')}
    WHERE name = $1 AND ${flag} RETURNING name`, [name, date(now)]);
  return rows.length === 1;
}

export async function queueListSettings(ctx: PgContext): Promise<QueueSettingsRecord[]> {
  const rows = await ctx.query<Record<string, unknown>>(null, `SELECT name, declared_at, declared_concurrency, declared_rate_limit, declared_rate_period_ms,
      declared_key_rate_limit, declared_key_rate_period_ms, concurrency_override, rate_override, key_rate_override
    FROM :schema.queues WHERE declared_at IS NOT NULL OR concurrency_override OR rate_override OR key_rate_override
    ORDER BY name`);
  return rows.map((r) => settingsRecord(r, (v) => v === true));
}
