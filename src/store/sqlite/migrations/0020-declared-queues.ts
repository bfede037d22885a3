import type { Migration } from '../../migrate.js';

/**
 * Queues declared in code (issue 30, `defineQueue`): each queue's settings as the code
 * declares them (`declared_*`, `declared_at`: when the declaration was last stored;
 * NULL: never declared), and per setting whether the value in force is an override set
 * by the CLI, the dashboard or the HTTP API (`*_override`). The columns the claim reads
 * (`concurrency`, `rate_limit`, …, migrations 0011 and 0013) stay the values in force: a
 * declaration writes them unless overridden, an override writes them and sets its flag,
 * clearing the override copies the declared value back. Limits and rates set before this
 * migration were set by hand: they are marked overrides, so a declaration does not undo them.
 */
export const migration: Migration = {
  version: 20,
  name: 'declared-queues',
  sql: `
    ALTER TABLE queues ADD COLUMN declared_at INTEGER;
    ALTER TABLE queues ADD COLUMN declared_concurrency INTEGER CHECK (declared_concurrency > 0);
    ALTER TABLE queues ADD COLUMN declared_rate_limit INTEGER CHECK (declared_rate_limit > 0);
    ALTER TABLE queues ADD COLUMN declared_rate_period_ms INTEGER CHECK (declared_rate_period_ms > 0);
    ALTER TABLE queues ADD COLUMN declared_key_rate_limit INTEGER CHECK (declared_key_rate_limit > 0);
    ALTER TABLE queues ADD COLUMN declared_key_rate_period_ms INTEGER CHECK (declared_key_rate_period_ms > 0);
    ALTER TABLE queues ADD COLUMN concurrency_override INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE queues ADD COLUMN rate_override INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE queues ADD COLUMN key_rate_override INTEGER NOT NULL DEFAULT 0;
    UPDATE queues SET concurrency_override = concurrency IS NOT NULL, rate_override = rate_limit IS NOT NULL,
      key_rate_override = key_rate_limit IS NOT NULL;
  `,
};
