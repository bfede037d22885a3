import type { Migration } from '../../migrate.js';

/**
 * Rate limits (issue 12): `queues.rate_limit` starts per `rate_period_ms` for the whole
 * queue and `queues.key_rate_limit` starts per `key_rate_period_ms` for each concurrency
 * key of it (NULL: none), and `rate_limit_starts`, the sliding window's log: one row per
 * start a limit counts, written by the trigger below in the claim's own statement, so a
 * start and its record commit together. A claim at `now` may start `limit` − (starts
 * after now − period) jobs; SQLite runs one writer at a time, so the count is exact. Why
 * a sliding log, and the PostgreSQL side: its migration 13. The pruner deletes rows older
 * than their queue's longest period (rateStartsPrune).
 */
export const migration: Migration = {
  version: 13,
  name: 'rate-limits',
  sql: `
    ALTER TABLE queues ADD COLUMN rate_limit INTEGER CHECK (rate_limit > 0);
    ALTER TABLE queues ADD COLUMN rate_period_ms INTEGER CHECK (rate_period_ms > 0);
    ALTER TABLE queues ADD COLUMN key_rate_limit INTEGER CHECK (key_rate_limit > 0);
    ALTER TABLE queues ADD COLUMN key_rate_period_ms INTEGER CHECK (key_rate_period_ms > 0);
    CREATE TABLE rate_limit_starts (
      queue TEXT NOT NULL,
      key TEXT,
      started_at INTEGER NOT NULL
    );
    CREATE INDEX rate_limit_starts_queue ON rate_limit_starts (queue, started_at);
    CREATE INDEX rate_limit_starts_key ON rate_limit_starts (queue, key, started_at) WHERE key IS NOT NULL;
    CREATE TRIGGER jobs_rate_start AFTER UPDATE OF state ON jobs
      WHEN NEW.state = 'running' AND EXISTS (SELECT 1 FROM queues WHERE name = NEW.queue
        AND (rate_limit IS NOT NULL OR (key_rate_limit IS NOT NULL AND NEW.concurrency_key IS NOT NULL)))
    BEGIN
      INSERT INTO rate_limit_starts (queue, key, started_at) VALUES (NEW.queue, NEW.concurrency_key, NEW.started_at);
    END;
  `,
};
