import type { Migration } from '../../migrate.js';

/**
 * Indexes of finished jobs for retention (src/maintenance/pruner.ts) and purges:
 * `jobs_finished_state` serves "this state, finished before T, oldest first" (and the
 * per-minute throughput, which the older `jobs_finished` served); `jobs_finished_queue`
 * serves "the newest N finished jobs of a queue" (keep-N). Queued and running jobs
 * (finished_at null) are in neither, so claims never touch them.
 */
export const migration: Migration = {
  version: 6,
  name: 'finished-indexes',
  sql: `
    CREATE INDEX jobs_finished_state ON jobs (state, finished_at, id) WHERE finished_at IS NOT NULL;
    CREATE INDEX jobs_finished_queue ON jobs (queue, finished_at, id) WHERE finished_at IS NOT NULL;
    DROP INDEX IF EXISTS jobs_finished;
  `,
};
