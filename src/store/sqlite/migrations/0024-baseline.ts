import type { Migration } from '../../migrate.js';
import { createJobTable } from './job-table.js';

/**
 * The SQLite schema of the first release, created in one step: the pre-release chain
 * (versions 1 to 24) folded into one migration. Times are INTEGER ms since the epoch;
 * JSON columns are TEXT. SQLite runs one writer at a time, so every count a claim reads
 * in its write transaction is exact. Version 24, the last of that chain: a database a
 * pre-release build migrated to its end is at this baseline already, and the next
 * migration is 25 (docs/development.md, "Migrations").
 * Comments and docs cite that chain's steps by number ("migration 10"): they are in
 * git, `git show e40fe94:src/store/<driver>/migrations/`.
 *
 * - `jobs`: every job, live and finished (SQLite has no dead rows for history to slow).
 *   Claims read `jobs_claim` (unkeyed queued jobs, queue first, so a backlog in a queue
 *   the worker does not serve or jobs due far ahead cost a claim nothing) and
 *   `jobs_claim_keyed`; `jobs_lease` serves the rescue, `jobs_cancel_requested` the
 *   cancel poll (a page or two: a row only from the request to the job's end),
 *   `jobs_running_queue` and `jobs_running_key` the limits, `jobs_finished_state` and
 *   `jobs_finished_queue` retention and purges (finished jobs only, so claims never touch
 *   them). `key` is unique among live jobs; `(schedule_name, scheduled_for)`, a
 *   schedule's tick, is unique, so each tick is enqueued at most once. `timeline` holds
 *   the events a row alone cannot tell afterwards (sqlite/timeline.ts), `trace_context`
 *   the W3C trace context of the enqueue, `wait` what a suspended run waits for
 *   (`{ kind, until, topic?, ids? }`), `parent_id` and `parent_step` the run and step that
 *   enqueued a child.
 * - `leases`, `services`, `schedules`, `workers` (a row per live worker, `queues`,
 *   `running` and `tasks` JSON arrays; NULL `tasks`: every task of its queues).
 *   `schedules.overlap` is written by every upsert; its default is never relied on.
 * - `queues`: pause, the fleet-wide `concurrency`, the queue's and each key's sliding-
 *   window rates, and the declared settings with a flag per setting overridden at run
 *   time (the columns the claim reads are the values in force).
 * - `concurrency_keys`: one row per (queue, key) with live jobs, its queued and running
 *   counts kept by the `jobs_key_*` triggers in the transaction of every change, its
 *   limit (the last enqueue's) and its last start, which orders the claim's turns (fewest
 *   running, then the longest unserved). A row whose counts reach 0 is deleted.
 * - `rate_limit_starts`: the sliding window's log, a row per start a rate counts, written
 *   by `jobs_rate_start` in the claim's own statement; pruned by rateStartsPrune.
 * - `job_steps` (a run's step log) and `job_messages` (its mailbox), deleted with their
 *   job by `job_steps_deleted`; `jobs_child_ended` makes a parent waiting for its
 *   children due when a waited child fails or is cancelled, or the last one ends.
 */
export const migration: Migration = {
  version: 24,
  name: 'baseline',
  sql: `
    ${createJobTable('jobs', 'INTEGER PRIMARY KEY AUTOINCREMENT', "'queued','running','completed','failed','cancelled'")}
    -- In the order of the pre-release chain, so that the planner sees the same list of indexes.
    CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';
    CREATE UNIQUE INDEX jobs_key ON jobs (key) WHERE key IS NOT NULL AND state IN ('queued','running');
    CREATE INDEX jobs_state ON jobs (state, id);
    CREATE UNIQUE INDEX jobs_schedule_tick ON jobs (schedule_name, scheduled_for) WHERE schedule_name IS NOT NULL AND scheduled_for IS NOT NULL;
    CREATE INDEX jobs_finished_state ON jobs (state, finished_at, id) WHERE finished_at IS NOT NULL;
    CREATE INDEX jobs_finished_queue ON jobs (queue, finished_at, id) WHERE finished_at IS NOT NULL;
    CREATE INDEX jobs_cancel_requested ON jobs (id) WHERE state = 'running' AND cancel_requested_at IS NOT NULL;
    CREATE INDEX jobs_running_queue ON jobs (queue) WHERE state = 'running';
    CREATE INDEX jobs_claim ON jobs (queue, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NULL;
    CREATE INDEX jobs_claim_keyed ON jobs (queue, concurrency_key, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NOT NULL;
    CREATE INDEX jobs_running_key ON jobs (queue, concurrency_key, started_at) WHERE state = 'running' AND concurrency_key IS NOT NULL;
    CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;

    CREATE TABLE leases (
      name TEXT PRIMARY KEY,
      owner TEXT,
      token INTEGER NOT NULL DEFAULT 0,
      expires_at INTEGER
    );
    CREATE TABLE services (
      name TEXT PRIMARY KEY,
      paused INTEGER NOT NULL DEFAULT 0,
      last_run_at INTEGER,
      next_run_at INTEGER,
      last_error TEXT,
      last_error_at INTEGER,
      failures INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE TABLE schedules (
      name TEXT PRIMARY KEY,
      cron TEXT,
      every_ms INTEGER,
      timezone TEXT NOT NULL,
      task TEXT NOT NULL,
      payload TEXT NOT NULL,
      queue TEXT NOT NULL,
      priority INTEGER NOT NULL,
      max_attempts INTEGER NOT NULL,
      timeout_ms INTEGER,
      catch_up TEXT NOT NULL CHECK (catch_up IN ('none','latest','all')),
      catch_up_limit INTEGER NOT NULL,
      paused INTEGER NOT NULL DEFAULT 0,
      next_run_at INTEGER,
      last_run_at INTEGER,
      last_worker TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      overlap TEXT NOT NULL DEFAULT 'allow' CHECK (overlap IN ('skip', 'queue', 'allow', 'cancelPrevious'))
    );
    CREATE INDEX schedules_next ON schedules (next_run_at) WHERE paused = 0;
    CREATE TABLE workers (
      id TEXT PRIMARY KEY,
      host TEXT NOT NULL,
      pid INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      last_heartbeat_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      concurrency INTEGER NOT NULL,
      queues TEXT NOT NULL,
      running TEXT NOT NULL,
      tasks TEXT
    );

    CREATE TABLE queues (
      name TEXT PRIMARY KEY,
      paused_at INTEGER,
      updated_at INTEGER NOT NULL,
      concurrency INTEGER CHECK (concurrency > 0),
      rate_limit INTEGER CHECK (rate_limit > 0),
      rate_period_ms INTEGER CHECK (rate_period_ms > 0),
      key_rate_limit INTEGER CHECK (key_rate_limit > 0),
      key_rate_period_ms INTEGER CHECK (key_rate_period_ms > 0),
      declared_at INTEGER,
      declared_concurrency INTEGER CHECK (declared_concurrency > 0),
      declared_rate_limit INTEGER CHECK (declared_rate_limit > 0),
      declared_rate_period_ms INTEGER CHECK (declared_rate_period_ms > 0),
      declared_key_rate_limit INTEGER CHECK (declared_key_rate_limit > 0),
      declared_key_rate_period_ms INTEGER CHECK (declared_key_rate_period_ms > 0),
      concurrency_override INTEGER NOT NULL DEFAULT 0,
      rate_override INTEGER NOT NULL DEFAULT 0,
      key_rate_override INTEGER NOT NULL DEFAULT 0
    );
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
    CREATE TABLE rate_limit_starts (
      queue TEXT NOT NULL,
      key TEXT,
      started_at INTEGER NOT NULL
    );
    CREATE INDEX rate_limit_starts_queue ON rate_limit_starts (queue, started_at);
    CREATE INDEX rate_limit_starts_key ON rate_limit_starts (queue, key, started_at) WHERE key IS NOT NULL;

    CREATE TABLE job_steps (
      job_id INTEGER NOT NULL,
      name TEXT NOT NULL,
      seq INTEGER NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('completed', 'failed', 'waiting')),
      attempt INTEGER NOT NULL,
      tries INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      finished_at INTEGER,
      result TEXT,
      error TEXT,
      PRIMARY KEY (job_id, name)
    ) WITHOUT ROWID;
    CREATE TABLE job_messages (
      id INTEGER PRIMARY KEY,
      job_id INTEGER NOT NULL,
      topic TEXT NOT NULL,
      payload TEXT NOT NULL,
      idempotency_key TEXT,
      sent_at INTEGER NOT NULL,
      taken_at INTEGER,
      taken_by TEXT
    );
    CREATE INDEX job_messages_pending ON job_messages (job_id, topic, id) WHERE taken_at IS NULL;
    CREATE UNIQUE INDEX job_messages_idempotency ON job_messages (job_id, topic, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX job_messages_job ON job_messages (job_id);

    -- Triggers on jobs, created in the order of the pre-release chain (which orders their firing; none depends on another).
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
    CREATE TRIGGER jobs_rate_start AFTER UPDATE OF state ON jobs
      WHEN NEW.state = 'running' AND EXISTS (SELECT 1 FROM queues WHERE name = NEW.queue
        AND (rate_limit IS NOT NULL OR (key_rate_limit IS NOT NULL AND NEW.concurrency_key IS NOT NULL)))
    BEGIN
      INSERT INTO rate_limit_starts (queue, key, started_at) VALUES (NEW.queue, NEW.concurrency_key, NEW.started_at);
    END;
    CREATE TRIGGER job_steps_deleted AFTER DELETE ON jobs BEGIN
      DELETE FROM job_steps WHERE job_id = old.id;
      DELETE FROM job_messages WHERE job_id = old.id;
    END;
    CREATE TRIGGER jobs_child_ended AFTER UPDATE OF state ON jobs
    WHEN new.parent_id IS NOT NULL AND new.state IN ('completed', 'failed', 'cancelled') AND old.state IN ('queued', 'running')
    BEGIN
      UPDATE jobs SET run_at = min(run_at, new.finished_at)
      WHERE id = new.parent_id AND state = 'queued' AND json_extract(wait, '$.kind') = 'children'
        AND (new.state <> 'completed' OR NOT EXISTS (SELECT 1 FROM json_each(jobs.wait, '$.ids') w JOIN jobs c ON c.id = w.value
          WHERE c.state IN ('queued', 'running')));
    END;
  `,
};
