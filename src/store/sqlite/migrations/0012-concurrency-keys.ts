import type { Migration } from '../../migrate.js';

/**
 * Concurrency keys (issue 12): a job may carry `concurrency_key` (at most
 * `concurrency_limit` of the queue's jobs with that key run at once; NULL: no limit,
 * only fair turns between keys). `concurrency_keys` holds one row per (queue, key) with
 * live jobs: its queued and running counts, kept by the triggers below in the same
 * transaction as every change of a keyed job's state, the key's limit (the last
 * enqueue's) and when a job of it last started, which orders the claim's turns (fewest
 * running first, then the longest unserved). A row whose counts reach 0 is deleted, so
 * the table holds live keys only. The claim reads keys from it instead of scanning every
 * queued job; keyed queued jobs leave `jobs_claim` (which now holds unkeyed ones only)
 * for `jobs_claim_keyed`, so a queue holding 100,000 keyed jobs costs an unkeyed claim
 * nothing. SQLite runs one writer at a time, so the claim's count is exact.
 */
export const migration: Migration = {
  version: 12,
  name: 'concurrency-keys',
  sql: `
    ALTER TABLE jobs ADD COLUMN concurrency_key TEXT;
    ALTER TABLE jobs ADD COLUMN concurrency_limit INTEGER CHECK (concurrency_limit > 0);
    CREATE TABLE concurrency_keys (
      queue TEXT NOT NULL,
      key TEXT NOT NULL,
      queued INTEGER NOT NULL CHECK (queued >= 0),
      running INTEGER NOT NULL CHECK (running >= 0),
      max_running INTEGER,
      last_started_at INTEGER,
      PRIMARY KEY (queue, key)
    ) WITHOUT ROWID;
    CREATE INDEX concurrency_keys_turn ON concurrency_keys (running, last_started_at, key, queue) WHERE queued > 0;
    DROP INDEX jobs_claim;
    CREATE INDEX jobs_claim ON jobs (queue, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NULL;
    CREATE INDEX jobs_claim_keyed ON jobs (queue, concurrency_key, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NOT NULL;
    CREATE INDEX jobs_running_key ON jobs (queue, concurrency_key, started_at) WHERE state = 'running' AND concurrency_key IS NOT NULL;
    CREATE TRIGGER jobs_key_insert AFTER INSERT ON jobs
      WHEN NEW.concurrency_key IS NOT NULL AND NEW.state IN ('queued', 'running')
    BEGIN
      INSERT INTO concurrency_keys (queue, key, queued, running, max_running) VALUES (NEW.queue, NEW.concurrency_key, 0, 0, NEW.concurrency_limit)
        ON CONFLICT (queue, key) DO UPDATE SET max_running = excluded.max_running;
      UPDATE concurrency_keys SET queued = queued + (NEW.state = 'queued'), running = running + (NEW.state = 'running')
        WHERE queue = NEW.queue AND key = NEW.concurrency_key;
    END;
    CREATE TRIGGER jobs_key_state AFTER UPDATE OF state ON jobs
      WHEN NEW.concurrency_key IS NOT NULL AND OLD.state <> NEW.state
    BEGIN
      INSERT INTO concurrency_keys (queue, key, queued, running, max_running)
        SELECT NEW.queue, NEW.concurrency_key, 0, 0, NEW.concurrency_limit WHERE NEW.state IN ('queued', 'running')
        ON CONFLICT (queue, key) DO NOTHING;
      UPDATE concurrency_keys SET
          queued = queued + (NEW.state = 'queued') - (OLD.state = 'queued'),
          running = running + (NEW.state = 'running') - (OLD.state = 'running'),
          last_started_at = CASE WHEN NEW.state = 'running' THEN NEW.started_at ELSE last_started_at END
        WHERE queue = NEW.queue AND key = NEW.concurrency_key;
      DELETE FROM concurrency_keys WHERE queue = NEW.queue AND key = NEW.concurrency_key AND queued = 0 AND running = 0;
    END;
    CREATE TRIGGER jobs_key_delete AFTER DELETE ON jobs
      WHEN OLD.concurrency_key IS NOT NULL AND OLD.state IN ('queued', 'running')
    BEGIN
      UPDATE concurrency_keys SET queued = queued - (OLD.state = 'queued'), running = running - (OLD.state = 'running')
        WHERE queue = OLD.queue AND key = OLD.concurrency_key;
      DELETE FROM concurrency_keys WHERE queue = OLD.queue AND key = OLD.concurrency_key AND queued = 0 AND running = 0;
    END;
  `,
};
