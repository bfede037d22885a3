import type { Migration } from '../../migrate.js';

/**
 * A job's stored timeline (issue 13), as SQLite's migration 18: `timeline`, a jsonb
 * array of the events of its life that its row alone cannot tell afterwards (releases on
 * shutdown, snoozes, rescues, retries scheduled, cancel requests and who asked, manual
 * retries), each appended by the statement that makes the transition
 * (src/store/postgres/timeline.ts); and `last_worker`, the worker of the latest attempt
 * that ended, kept when the lease is cleared. Both columns in `jobs` and `jobs_finished`
 * (a move carries them, move.ts), and `jobs_all` recreated over them. A constant default
 * adds the columns without rewriting either table. Attempt starts are not stored: the
 * current one is on the row, and an event that ends an attempt carries that attempt's
 * start, worker and lease token.
 */
export const migration: Migration = {
  version: 18,
  name: 'job-timeline',
  sql: `
    ALTER TABLE :schema.jobs ADD COLUMN timeline jsonb NOT NULL DEFAULT '[]', ADD COLUMN last_worker text;
    ALTER TABLE :schema.jobs_finished ADD COLUMN timeline jsonb NOT NULL DEFAULT '[]', ADD COLUMN last_worker text;
    CREATE OR REPLACE VIEW :schema.jobs_all AS SELECT * FROM :schema.jobs UNION ALL SELECT * FROM :schema.jobs_finished;
  `,
};
