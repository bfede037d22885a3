import type { Migration } from '../../migrate.js';

/**
 * Queues declared in code (issue 30, `defineQueue`), as SQLite's migration 20: the
 * declared settings (`declared_*`, `declared_at`) and per setting whether the value in
 * force, which the claim reads, is an override (`*_override`). Limits and rates set
 * before this migration were set by hand: they are marked overrides. A declaration that
 * raises or clears a limit or changes a rate updates the columns the NOTIFY triggers of
 * migrations 11 and 13 watch, so waiting workers claim at once, as after `baton queue limit`.
 */
export const migration: Migration = {
  version: 20,
  name: 'declared-queues',
  sql: `
    ALTER TABLE :schema.queues
      ADD COLUMN declared_at timestamptz,
      ADD COLUMN declared_concurrency integer CHECK (declared_concurrency > 0),
      ADD COLUMN declared_rate_limit integer CHECK (declared_rate_limit > 0),
      ADD COLUMN declared_rate_period_ms integer CHECK (declared_rate_period_ms > 0),
      ADD COLUMN declared_key_rate_limit integer CHECK (declared_key_rate_limit > 0),
      ADD COLUMN declared_key_rate_period_ms integer CHECK (declared_key_rate_period_ms > 0),
      ADD COLUMN concurrency_override boolean NOT NULL DEFAULT false,
      ADD COLUMN rate_override boolean NOT NULL DEFAULT false,
      ADD COLUMN key_rate_override boolean NOT NULL DEFAULT false;
    UPDATE :schema.queues SET concurrency_override = concurrency IS NOT NULL, rate_override = rate_limit IS NOT NULL,
      key_rate_override = key_rate_limit IS NOT NULL;
  `,
};
