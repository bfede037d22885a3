import type { Migration } from '../../migrate.js';

/**
 * A job's stored timeline (issue 13), as PostgreSQL's migration 18: `jobs.timeline`, a
 * JSON array of the events of its life that its row alone cannot tell afterwards
 * (releases on shutdown, snoozes, rescues, retries scheduled, cancel requests and who
 * asked, manual retries), each appended by the statement that makes the transition
 * (src/store/sqlite/timeline.ts); and `jobs.last_worker`, the worker of the latest
 * attempt that ended, kept when the lease is cleared. Attempt starts are not stored: the
 * current one is on the row (started_at, lease owner or last_worker), and an event that
 * ends an attempt carries that attempt's start, worker and lease token. Rows stored
 * before this get an empty timeline; their story is what their fields tell.
 */
export const migration: Migration = {
  version: 18,
  name: 'job-timeline',
  sql: `
    ALTER TABLE jobs ADD COLUMN timeline TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE jobs ADD COLUMN last_worker TEXT;
  `,
};
