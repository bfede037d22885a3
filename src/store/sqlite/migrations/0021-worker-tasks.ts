import type { Migration } from '../../migrate.js';

/**
 * The tasks each worker serves (issue 30): `workers.tasks`, a JSON array of task names,
 * written with the rest of its registration, so that a job whose task no live worker of
 * its queue serves can be named (`queueUnservedTasks`). NULL for a row written by a
 * worker from before this version: it is taken to serve every task of its queues.
 */
export const migration: Migration = {
  version: 21,
  name: 'worker-tasks',
  sql: `
    ALTER TABLE workers ADD COLUMN tasks TEXT;
  `,
};
