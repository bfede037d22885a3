import type { Migration } from '../../migrate.js';

/**
 * The claim index leads with the queue, as PostgreSQL's always has: (queue, priority,
 * run_at, id) over queued jobs. The claim (sqlite/jobs.ts) seeks each served queue's
 * priorities in turn and reads only its due jobs, so a backlog in a queue the worker
 * does not serve, or jobs delayed far ahead, costs nothing per claim (bench workload
 * `backlog`). Rebuilding the index reads the queued jobs once, at upgrade.
 * PostgreSQL has no migration 8: its jobs_claim index was made this way by migration 1.
 */
export const migration: Migration = {
  version: 8,
  name: 'claim-by-queue',
  sql: `
    DROP INDEX jobs_claim;
    CREATE INDEX jobs_claim ON jobs (queue, priority, run_at, id) WHERE state = 'queued';
  `,
};
