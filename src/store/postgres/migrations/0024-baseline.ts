import type { Migration } from '../../migrate.js';
import { claimJobs } from './claim-jobs.js';
import { triggers } from './triggers.js';

/**
 * The PostgreSQL schema of the first release, created in one step: the pre-release chain
 * (versions 1 to 24) folded into one migration, with SQLite's version number. Version
 * 24, the last of that chain: a schema a pre-release build migrated to its end is at
 * this baseline already, and the next migration is 25 (docs/development.md,
 * "Migrations"). `:schema` is replaced by the quoted schema name. Its trigger functions
 * are in triggers.ts, the claim in claim-jobs.ts.
 * Comments and docs cite that chain's steps by number ("migration 10"): they are in
 * git, `git show e40fe94:src/store/<driver>/migrations/`.
 *
 * - `jobs` holds only queued and running jobs; a job that completes, fails for good or is
 *   cancelled is moved to `jobs_finished` (deleted from one, inserted into the other, in
 *   the statement that finishes it: src/store/postgres/move.ts), and a retry moves it
 *   back. So the table that claims, completions and lease renewals work on, its indexes
 *   and every VACUUM of it stay the size of the live work, however much history is kept.
 *   The CHECKs make a finished row in `jobs`, or a live one in `jobs_finished`, an error
 *   rather than a drift, and let the planner skip the table a state filter excludes.
 *   `jobs_all` is both as one, for the reads that span them (get, list, counts, bulk
 *   filters). A column added to `jobs` must be added to `jobs_finished` too, the view
 *   recreated and the column listed in move.ts's JOB_COLUMNS (a test compares them).
 * - `jobs`' autovacuum runs at 1,000 + 1% dead or inserted rows, analyzes at 1,000 + 2%
 *   changed, unthrottled, where the defaults (50 + 20%, throttled) fall behind a table
 *   that churns every row; per table, so nothing else on the server changes. Where
 *   autovacuum is off, the worker's table vacuum (src/maintenance/vacuum.ts) cleans it.
 * - Indexes of `jobs`: `jobs_claim` (unkeyed queued jobs, queue first) and
 *   `jobs_claim_keyed` for the claim, `jobs_running` (a queue's and a key's running jobs,
 *   counted where a limit is checked), `jobs_lease` for the rescue,
 *   `jobs_cancel_requested` for the cancel poll (a row only from the request to the
 *   job's end), `jobs_key` (a key is unique among live jobs), `jobs_schedule_tick` (a
 *   schedule's tick has one job; `refuse_finished_tick` covers the finished one).
 *   `jobs_finished`'s serve retention, purges, listings and children.
 * - `queues`: pause, the fleet-wide `concurrency`, the queue's and each key's sliding-
 *   window rates, and the declared settings with a flag per setting overridden at run
 *   time (the columns the claim reads are the values in force).
 * - `concurrency_keys`: a row per (queue, key) with queued jobs: the queued count, the
 *   limit (the last enqueue's) and the last start, which orders the claim's turns.
 *   `rate_limit_starts`: the rates' sliding log, written by the claim, pruned by
 *   rateStartsPrune.
 * - `job_steps` (a run's step log), `job_messages` (its mailbox) and the jobs' `wait`,
 *   `parent_id` and `parent_step`: durable execution. No foreign keys, since a job moves
 *   between two tables: the deletes of a job (job-bulk.ts, retention.ts) delete its steps
 *   and messages in the same statement.
 * - `finished_listeners`: the processes awaiting a job's end (`finishedListen`), which
 *   turn `notify_finished` on.
 * - `schedules.overlap` is written by every upsert; its default is never relied on.
 */
export const migration: Migration = {
  version: 24,
  name: 'baseline',
  sql: `
    CREATE TABLE :schema.jobs (
      id bigserial PRIMARY KEY,
      queue text NOT NULL,
      task text NOT NULL,
      payload json NOT NULL,
      state text NOT NULL CONSTRAINT jobs_live_state_check CHECK (state IN ('queued','running')),
      priority integer NOT NULL DEFAULT 0,
      run_at timestamptz NOT NULL,
      attempt integer NOT NULL DEFAULT 0,
      max_attempts integer NOT NULL,
      timeout_ms integer,
      key text,
      progress jsonb,
      checkpoint json,
      result json,
      errors jsonb NOT NULL DEFAULT '[]',
      cancel_requested_at timestamptz,
      cancel_reason text,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz,
      lease_owner text,
      lease_expires_at timestamptz,
      lease_token integer NOT NULL DEFAULT 0,
      schedule_name text,
      scheduled_for timestamptz,
      concurrency_key text,
      concurrency_limit integer CHECK (concurrency_limit > 0),
      trace_context json,
      timeline jsonb NOT NULL DEFAULT '[]',
      last_worker text,
      wait jsonb,
      parent_id bigint,
      parent_step text
    ) WITH (
      autovacuum_vacuum_threshold = 1000,
      autovacuum_vacuum_scale_factor = 0.01,
      autovacuum_vacuum_insert_threshold = 1000,
      autovacuum_vacuum_insert_scale_factor = 0.01,
      autovacuum_analyze_threshold = 1000,
      autovacuum_analyze_scale_factor = 0.02,
      autovacuum_vacuum_cost_delay = 0
    );
    CREATE INDEX jobs_lease ON :schema.jobs (lease_expires_at) WHERE state = 'running';
    CREATE UNIQUE INDEX jobs_key ON :schema.jobs (key) WHERE key IS NOT NULL AND state IN ('queued','running');
    CREATE INDEX jobs_state ON :schema.jobs (state, id);
    CREATE UNIQUE INDEX jobs_schedule_tick ON :schema.jobs (schedule_name, scheduled_for) WHERE schedule_name IS NOT NULL AND scheduled_for IS NOT NULL;
    CREATE INDEX jobs_cancel_requested ON :schema.jobs (id) WHERE state = 'running' AND cancel_requested_at IS NOT NULL;
    CREATE INDEX jobs_claim ON :schema.jobs (queue, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NULL;
    CREATE INDEX jobs_claim_keyed ON :schema.jobs (queue, concurrency_key, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NOT NULL;
    CREATE INDEX jobs_running ON :schema.jobs (queue, concurrency_key, started_at) WHERE state = 'running';
    CREATE INDEX jobs_parent ON :schema.jobs (parent_id) WHERE parent_id IS NOT NULL;

    CREATE TABLE :schema.jobs_finished (LIKE :schema.jobs INCLUDING DEFAULTS INCLUDING STORAGE);
    ALTER TABLE :schema.jobs_finished ALTER COLUMN id DROP DEFAULT,
      ADD PRIMARY KEY (id),
      ADD CONSTRAINT jobs_finished_state_check CHECK (state IN ('completed','failed','cancelled'));
    CREATE INDEX jobs_finished_state ON :schema.jobs_finished (state, finished_at, id);
    CREATE INDEX jobs_finished_queue ON :schema.jobs_finished (queue, finished_at, id);
    CREATE INDEX jobs_finished_list ON :schema.jobs_finished (state, id);
    CREATE UNIQUE INDEX jobs_finished_schedule_tick ON :schema.jobs_finished (schedule_name, scheduled_for)
      WHERE schedule_name IS NOT NULL AND scheduled_for IS NOT NULL;
    CREATE INDEX jobs_finished_parent ON :schema.jobs_finished (parent_id) WHERE parent_id IS NOT NULL;
    CREATE VIEW :schema.jobs_all AS SELECT * FROM :schema.jobs UNION ALL SELECT * FROM :schema.jobs_finished;

    CREATE TABLE :schema.leases (
      name text PRIMARY KEY,
      owner text,
      token bigint NOT NULL DEFAULT 0,
      expires_at timestamptz
    );
    CREATE TABLE :schema.services (
      name text PRIMARY KEY,
      paused boolean NOT NULL DEFAULT false,
      last_run_at timestamptz,
      next_run_at timestamptz,
      last_error text,
      last_error_at timestamptz,
      failures integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE :schema.schedules (
      name text PRIMARY KEY,
      cron text,
      every_ms bigint,
      timezone text NOT NULL,
      task text NOT NULL,
      payload json NOT NULL,
      queue text NOT NULL,
      priority integer NOT NULL,
      max_attempts integer NOT NULL,
      timeout_ms integer,
      catch_up text NOT NULL CHECK (catch_up IN ('none','latest','all')),
      catch_up_limit integer NOT NULL,
      paused boolean NOT NULL DEFAULT false,
      next_run_at timestamptz,
      last_run_at timestamptz,
      last_worker text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      overlap text NOT NULL DEFAULT 'allow' CHECK (overlap IN ('skip', 'queue', 'allow', 'cancelPrevious'))
    );
    CREATE INDEX schedules_next ON :schema.schedules (next_run_at) WHERE NOT paused;
    CREATE TABLE :schema.workers (
      id text PRIMARY KEY,
      host text NOT NULL,
      pid integer NOT NULL,
      started_at timestamptz NOT NULL,
      last_heartbeat_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      concurrency integer NOT NULL,
      queues text[] NOT NULL,
      running bigint[] NOT NULL,
      tasks text[]
    );

    CREATE TABLE :schema.queues (
      name text PRIMARY KEY,
      paused_at timestamptz,
      updated_at timestamptz NOT NULL,
      concurrency integer CHECK (concurrency > 0),
      rate_limit integer CHECK (rate_limit > 0),
      rate_period_ms integer CHECK (rate_period_ms > 0),
      key_rate_limit integer CHECK (key_rate_limit > 0),
      key_rate_period_ms integer CHECK (key_rate_period_ms > 0),
      declared_at timestamptz,
      declared_concurrency integer CHECK (declared_concurrency > 0),
      declared_rate_limit integer CHECK (declared_rate_limit > 0),
      declared_rate_period_ms integer CHECK (declared_rate_period_ms > 0),
      declared_key_rate_limit integer CHECK (declared_key_rate_limit > 0),
      declared_key_rate_period_ms integer CHECK (declared_key_rate_period_ms > 0),
      concurrency_override boolean NOT NULL DEFAULT false,
      rate_override boolean NOT NULL DEFAULT false,
      key_rate_override boolean NOT NULL DEFAULT false,
      CHECK ((rate_limit IS NULL) = (rate_period_ms IS NULL)),
      CHECK ((key_rate_limit IS NULL) = (key_rate_period_ms IS NULL))
    );
    CREATE TABLE :schema.concurrency_keys (
      queue text NOT NULL,
      key text NOT NULL,
      queued integer NOT NULL CHECK (queued >= 0),
      max_running integer,
      last_started_at timestamptz,
      PRIMARY KEY (queue, key)
    );
    CREATE INDEX concurrency_keys_turn ON :schema.concurrency_keys (last_started_at NULLS FIRST, key, queue) WHERE queued > 0;
    CREATE TABLE :schema.rate_limit_starts (
      queue text NOT NULL,
      key text,
      started_at timestamptz NOT NULL
    );
    CREATE INDEX rate_limit_starts_queue ON :schema.rate_limit_starts (queue, started_at);
    CREATE INDEX rate_limit_starts_key ON :schema.rate_limit_starts (queue, key, started_at) WHERE key IS NOT NULL;

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
    CREATE TABLE :schema.finished_listeners (
      owner text PRIMARY KEY,
      expires_at timestamptz NOT NULL
    );
${triggers}${claimJobs}  `,
};
