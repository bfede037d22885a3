import type { Migration } from '../../migrate.js';

/**
 * Fleet-wide queue concurrency (issue 12): `queues.concurrency`, the most jobs of the
 * queue running at once across every worker (NULL: no limit), and an index of the
 * running jobs by queue, which the claim counts against it in the same write
 * transaction (SQLite runs one writer at a time, so the count is exact).
 */
export const migration: Migration = {
  version: 11,
  name: 'queue-concurrency',
  sql: `
    ALTER TABLE queues ADD COLUMN concurrency INTEGER CHECK (concurrency > 0);
    CREATE INDEX jobs_running_queue ON jobs (queue) WHERE state = 'running';
  `,
};
