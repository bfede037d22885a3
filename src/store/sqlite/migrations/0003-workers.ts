import type { Migration } from '../../migrate.js';

/**
 * The worker registry: each worker upserts its row at start and on every heartbeat
 * tick and deletes it at stop; a row whose `expires_at` passed belongs to a worker
 * that crashed or froze and is not listed. `queues` and `running` are JSON arrays.
 * Plus an index for the throughput of finished jobs per minute.
 */
export const migration: Migration = {
  version: 3,
  name: 'workers',
  sql: `
    CREATE TABLE workers (
      id TEXT PRIMARY KEY,
      host TEXT NOT NULL,
      pid INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      last_heartbeat_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      concurrency INTEGER NOT NULL,
      queues TEXT NOT NULL,
      running TEXT NOT NULL
    );
    CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
  `,
};
