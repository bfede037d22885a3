import type { Migration } from '../../migrate.js';

/**
 * Named leases (locks and services), services, recurring schedules, and the tick a
 * scheduled job belongs to: `(schedule_name, scheduled_for)` is unique, so each tick
 * of a schedule is enqueued at most once (cases.md C13).
 */
export const migration: Migration = {
  version: 2,
  name: 'schedules-leases',
  sql: `
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
      updated_at timestamptz NOT NULL
    );
    CREATE INDEX schedules_next ON :schema.schedules (next_run_at) WHERE NOT paused;
    ALTER TABLE :schema.jobs ADD COLUMN schedule_name text, ADD COLUMN scheduled_for timestamptz;
    CREATE UNIQUE INDEX jobs_schedule_tick ON :schema.jobs (schedule_name, scheduled_for) WHERE schedule_name IS NOT NULL AND scheduled_for IS NOT NULL;
  `,
};
