import type { QueueSetting, QueueSettingsRecord } from './types.js';

/**
 * The `queues` columns of declared settings and overrides (migration 0020), shared by
 * both drivers' queue-declarations.ts: the column names are the same on both.
 */

/** Per setting: its override flag, the columns in force, and the declared columns they copy. */
export const SETTING_COLUMNS: Record<QueueSetting, { flag: string; columns: Array<[inForce: string, declared: string]> }> = {
  concurrency: { flag: 'concurrency_override', columns: [['concurrency', 'declared_concurrency']] },
  rateLimit: { flag: 'rate_override', columns: [['rate_limit', 'declared_rate_limit'], ['rate_period_ms', 'declared_rate_period_ms']] },
  keyRateLimit: { flag: 'key_rate_override', columns: [['key_rate_limit', 'declared_key_rate_limit'], ['key_rate_period_ms', 'declared_key_rate_period_ms']] },
};

const ALL = Object.values(SETTING_COLUMNS);
/** The declared columns and the columns in force, in the same order (a declaration's values go to both). */
export const DECLARED_COLUMNS = ALL.flatMap((s) => s.columns.map(([, d]) => d));
export const IN_FORCE_COLUMNS = ALL.flatMap((s) => s.columns.map(([c]) => c));

/**
 * The `ON CONFLICT (name) DO UPDATE` of `queueDeclare`: stores the declaration (its values
 * in the row `excluded`) and, per setting not overridden, makes it the value in force;
 * writes nothing when the row already is so (no lock kept, no trigger fired).
 * @param dialect.isNot - SQLite `IS NOT`, PostgreSQL `IS DISTINCT FROM`; `dialect.on` - how a flag reads as true
 */
export function declareConflictClause(now: string, dialect: { isNot: string; on: (flag: string) => string }): string {
  const target = (flag: string, inForce: string, declared: string) => `CASE WHEN ${dialect.on(`queues.${flag}`)} THEN queues.${inForce} ELSE excluded.${declared} END`;
  const pairs = ALL.flatMap((s) => s.columns.map(([c, d]) => ({ c, d, flag: s.flag })));
  return `ON CONFLICT (name) DO UPDATE SET declared_at = ${now}, updated_at = ${now},
      ${pairs.map(({ d }) => `${d} = excluded.${d}`).join(', ')},
      ${pairs.map(({ c, d, flag }) => `${c} = ${target(flag, c, d)}`).join(', ')}
    WHERE queues.declared_at IS NULL
      OR ${pairs.map(({ d }) => `queues.${d} ${dialect.isNot} excluded.${d}`).join(' OR ')}
      OR ${pairs.map(({ c, d, flag }) => `queues.${c} ${dialect.isNot} ${target(flag, c, d)}`).join(' OR ')}`;
}

/** A row of `queueListSettings` (either driver: column names alike) as a record; `flag` reads a boolean column. */
export function settingsRecord(r: Record<string, unknown>, flag: (value: unknown) => boolean): QueueSettingsRecord {
  const rate = (limit: unknown, periodMs: unknown) => (limit === null ? null : { limit: limit as number, periodMs: periodMs as number });
  const at = r.declared_at;
  return {
    queue: r.name as string,
    declaredAt: at === null ? null : at instanceof Date ? at.getTime() : (at as number),
    declared: {
      concurrency: r.declared_concurrency as number | null,
      rateLimit: rate(r.declared_rate_limit, r.declared_rate_period_ms),
      keyRateLimit: rate(r.declared_key_rate_limit, r.declared_key_rate_period_ms),
    },
    overridden: { concurrency: flag(r.concurrency_override), rateLimit: flag(r.rate_override), keyRateLimit: flag(r.key_rate_override) },
  };
}
