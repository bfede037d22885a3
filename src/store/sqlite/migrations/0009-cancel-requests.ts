import type { Migration } from '../../migrate.js';

/**
 * An index of the running jobs that have a cancel request, so the worker's cancel poll
 * (`jobCancelRequests` over the ids it holds, every cancelPollInterval) reads those few
 * rows instead of looking up every job the worker runs: with 2,000 running jobs that
 * was 2,000 row reads five times a second (bench workload `many-running`). It holds a
 * row only from the cancel request to the job's end, so it stays a page or two.
 */
export const migration: Migration = {
  version: 9,
  name: 'cancel-requests',
  sql: `
    CREATE INDEX jobs_cancel_requested ON jobs (id) WHERE state = 'running' AND cancel_requested_at IS NOT NULL;
  `,
};
