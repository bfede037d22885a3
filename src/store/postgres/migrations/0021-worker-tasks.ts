import type { Migration } from '../../migrate.js';

/**
 * The tasks each worker serves (issue 30), as SQLite's migration 21: `workers.tasks`
 * (text[]), written with the rest of its registration; NULL for a row written by a
 * worker from before this version, taken to serve every task of its queues.
 */
export const migration: Migration = {
  version: 21,
  name: 'worker-tasks',
  sql: `
    ALTER TABLE :schema.workers ADD COLUMN tasks text[];
  `,
};
