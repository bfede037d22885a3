import type { Migration } from '../../migrate.js';

/** Jobs table. Times are INTEGER ms since the epoch; JSON columns are TEXT. */
export const migration: Migration = {
  version: 1,
  name: 'jobs',
  sql: `
    CREATE TABLE jobs (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      queue TEXT NOT NULL,
      task TEXT NOT NULL,
      payload TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('queued','running','completed','failed','cancelled')),
      priority INTEGER NOT NULL DEFAULT 0,
      run_at INTEGER NOT NULL,
      attempt INTEGER NOT NULL DEFAULT 0,
      max_attempts INTEGER NOT NULL,
      timeout_ms INTEGER,
      key TEXT,
      progress TEXT,
      checkpoint TEXT,
      result TEXT,
      errors TEXT NOT NULL DEFAULT '[]',
      cancel_requested_at INTEGER,
      cancel_reason TEXT,
      created_at INTEGER NOT NULL,
      started_at INTEGER,
      finished_at INTEGER,
      lease_owner TEXT,
      lease_expires_at INTEGER,
      lease_token INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX jobs_claim ON jobs (priority, run_at, id) WHERE state = 'queued';
    CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';
    CREATE UNIQUE INDEX jobs_key ON jobs (key) WHERE key IS NOT NULL AND state IN ('queued','running');
    CREATE INDEX jobs_state ON jobs (state, id);
  `,
};
