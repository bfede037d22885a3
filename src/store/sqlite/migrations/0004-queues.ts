import type { Migration } from '../../migrate.js';

/**
 * Paused queues: a row per queue that was ever paused; `paused_at` set while it is
 * paused (NULL once resumed). The claim skips a queue whose row has `paused_at`, in
 * the same statement. Resuming needs no trigger: the change watch of every other
 * process sees the commit (data_version) and claims again.
 */
export const migration: Migration = {
  version: 4,
  name: 'queues',
  sql: `
    CREATE TABLE queues (
      name TEXT PRIMARY KEY,
      paused_at INTEGER,
      updated_at INTEGER NOT NULL
    );
  `,
};
