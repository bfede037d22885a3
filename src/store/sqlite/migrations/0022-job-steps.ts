import type { Migration } from '../../migrate.js';

/**
 * Durable execution (issue 32), as PostgreSQL's migration 22:
 * - `job_steps`: a job's step log, one row per step identity (`name`, `name#2`, …):
 *   `completed` with its JSON result, `failed` with its error (the attempt failed and a
 *   retry runs it again), or `waiting` (a `receive` holding its deadline in `result`).
 *   `seq` orders the log by first run; `attempt` is the job's attempt that wrote the
 *   row, `tries` the tries inside that run (a step's own `maxAttempts`).
 * - `jobs.wait`: what a queued job waits for (JSON `{ kind, until, topic? }`), set by a
 *   release that suspends the run (`ctx.sleep`, `ctx.receive`), cleared when an attempt ends.
 * - `job_messages`: each job's mailbox (`baton.send`); a message is pending until a
 *   `receive` takes it (`taken_at`, `taken_by` the receiving step), at most once per
 *   (job, topic, idempotency key).
 * Deleting a job deletes its steps and messages (trigger `job_steps_deleted`).
 */
export const migration: Migration = {
  version: 22,
  name: 'job-steps',
  sql: `
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
    ALTER TABLE jobs ADD COLUMN wait TEXT;
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
    CREATE TRIGGER job_steps_deleted AFTER DELETE ON jobs BEGIN
      DELETE FROM job_steps WHERE job_id = old.id;
      DELETE FROM job_messages WHERE job_id = old.id;
    END;
  `,
};
