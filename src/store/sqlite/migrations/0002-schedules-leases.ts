import type { Migration } from '../../migrate.js';

/**
 * Named leases (locks and services), services, recurring schedules, and the tick a
 * scheduled job belongs to: `(schedule_name, scheduled_for)` is unique, so each tick
 * of a schedule is enqueued at most once (cases.md C13). Times are INTEGER ms.
 */
export const migration: Migration = {
  version: 2,
  name: 'schedules-leases',
  sql: `
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
      updated_at INTEGER NOT NULL
    );
    CREATE INDEX schedules_next ON schedules (next_run_at) WHERE paused = 0;
    ALTER TABLE jobs ADD COLUMN schedule_name TEXT;
    ALTER TABLE jobs ADD COLUMN scheduled_for INTEGER;
    CREATE UNIQUE INDEX jobs_schedule_tick ON jobs (schedule_name, scheduled_for) WHERE schedule_name IS NOT NULL AND scheduled_for IS NOT NULL;
  `,
};
