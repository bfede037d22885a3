import type { QueueSettingsRecord, StoreParams } from '../store.js';
import { DECLARED_COLUMNS, IN_FORCE_COLUMNS, SETTING_COLUMNS, declareConflictClause, settingsRecord } from '../queue-settings.js';
import type { SqliteContext } from './context.js';

/**
 * Queues declared in code on SQLite (`queues.declared_*` and `*_override`, migration
 * 0020); see the Store interface. The value in force of a setting not overridden is its
 * declared value; the claim reads only the values in force.
 */

export async function queueDeclare(ctx: SqliteContext, { queues, now }: StoreParams<'queueDeclare'>): Promise<string[]> {
  const statement = ctx.sql(`
    INSERT INTO queues (name, declared_at, updated_at, ${DECLARED_COLUMNS.join(', ')}, ${IN_FORCE_COLUMNS.join(', ')})
    VALUES (@name, @now, @now, @c, @rl, @rp, @kl, @kp, @c, @rl, @rp, @kl, @kp)
    ${declareConflictClause('@now', { isNot: 'IS NOT', on: (flag) => `${flag} = 1` })}
    RETURNING name`);
  const sorted = [...queues].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return ctx.transaction(() => sorted.flatMap((q) => statement.all({
    name: q.name, now, c: q.concurrency,
    rl: q.rateLimit?.limit ?? null, rp: q.rateLimit?.periodMs ?? null,
    kl: q.keyRateLimit?.limit ?? null, kp: q.keyRateLimit?.periodMs ?? null,
  }) as Array<{ name: string }>).map((row) => row.name));
}

export async function queueClearOverride(ctx: SqliteContext, { name, setting, now }: StoreParams<'queueClearOverride'>): Promise<boolean> {
  const { flag, columns } = SETTING_COLUMNS[setting];
  return ctx.sql(`UPDATE queues SET ${flag} = 0, updated_at = @now, ${columns.map(([c, d]) => `${c} = ${d}`).join(', ')}
    WHERE name = @name AND ${flag} = 1`).run({ name, now }).changes === 1;
}

export async function queueListSettings(ctx: SqliteContext): Promise<QueueSettingsRecord[]> {
  const rows = ctx.sql(`SELECT name, declared_at, declared_concurrency, declared_rate_limit, declared_rate_period_ms,
      declared_key_rate_limit, declared_key_rate_period_ms, concurrency_override, rate_override, key_rate_override
    FROM queues WHERE declared_at IS NOT NULL OR concurrency_override = 1 OR rate_override = 1 OR key_rate_override = 1
    ORDER BY name`).all() as Array<Record<string, number | null> & { name: string }>;
  return rows.map((r) => settingsRecord(r, (v) => v === 1));
}
