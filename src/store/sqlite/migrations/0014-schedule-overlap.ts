import type { Migration } from '../../migrate.js';

/**
 * Schedule overlap policies (issue 12): `schedules.overlap`, what a tick does while the
 * schedule's previous run is still queued or running (skip, queue, allow,
 * cancelPrevious; see Overlap in schedule/schedule.ts). Rows stored before this keep
 * `allow`, what they did; a schedule defined since gets its definition's value (default
 * skip) at its next upsert.
 */
export const migration: Migration = {
  version: 14,
  name: 'schedule-overlap',
  sql: `
    ALTER TABLE schedules ADD COLUMN overlap text NOT NULL DEFAULT 'allow'
      CHECK (overlap IN ('skip', 'queue', 'allow', 'cancelPrevious'));
  `,
};
