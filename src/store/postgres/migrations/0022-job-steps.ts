import type { Migration } from '../../migrate.js';

/**
 * Durable execution (issue 32), as SQLite's migration 22:
 * - `job_steps`: a job's step log, one row per step identity (`name`, `name#2`, …):
 *   `completed` with its JSON result, `failed` with its error, or `waiting` (a
 *   `receive` holding its deadline in `result`); `seq` orders it by first run.
 * - `wait` in both job tables (`jobs_all` recreated over them): what a queued job
 *   waits for (`{ kind, until, topic? }`), set by a release that suspends the run,
 *   cleared when an attempt ends.
 * - `job_messages`: each job's mailbox; pending until a `receive` takes it, at most
 *   once per (job, topic, idempotency key).
 * No foreign keys: a job moves between `jobs` and `jobs_finished` (a DELETE and an
 * INSERT), so the deletes of a job (job-bulk.ts, retention.ts) delete its steps and
 * messages in the same statement.
 */
export const migration: Migration = {
  version: 22,
  name: 'job-steps',
  sql: `
    CREATE TABLE :schema.job_steps (
      job_id bigint NOT NULL,
      name text NOT NULL,
      seq integer NOT NULL,
      state text NOT NULL CHECK (state IN ('completed', 'failed', 'waiting')),
      attempt integer NOT NULL,
      tries integer NOT NULL,
      started_at timestamptz NOT NULL,
      finished_at timestamptz,
      result json,
      error text,
      PRIMARY KEY (job_id, name)
    );
    ALTER TABLE :schema.jobs ADD COLUMN wait jsonb;
    ALTER TABLE :schema.jobs_finished ADD COLUMN wait jsonb;
    CREATE OR REPLACE VIEW :schema.jobs_all AS SELECT * FROM :schema.jobs UNION ALL SELECT * FROM :schema.jobs_finished;
    CREATE TABLE :schema.job_messages (
      id bigserial PRIMARY KEY,
      job_id bigint NOT NULL,
      topic text NOT NULL,
      payload json NOT NULL,
      idempotency_key text,
      sent_at timestamptz NOT NULL,
      taken_at timestamptz,
      taken_by text
    );
    CREATE INDEX job_messages_pending ON :schema.job_messages (job_id, topic, id) WHERE taken_at IS NULL;
    CREATE UNIQUE INDEX job_messages_idempotency ON :schema.job_messages (job_id, topic, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX job_messages_job ON :schema.job_messages (job_id);
  `,
};
