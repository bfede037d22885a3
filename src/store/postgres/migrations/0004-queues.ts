import type { Migration } from '../../migrate.js';

/**
 * Paused queues: a row per queue that was ever paused; `paused_at` set while it is
 * paused (NULL once resumed). The claim skips a queue whose row has `paused_at`, in
 * the same statement, so pausing needs no message. Resuming NOTIFYs
 * `<schema>_jobs` (sent at commit, like a new job): every listening worker claims at once.
 */
export const migration: Migration = {
  version: 4,
  name: 'queues',
  sql: `
    CREATE TABLE :schema.queues (
      name text PRIMARY KEY,
      paused_at timestamptz,
      updated_at timestamptz NOT NULL
    );
    CREATE TRIGGER queues_resumed AFTER UPDATE OF paused_at ON :schema.queues
      FOR EACH ROW WHEN (OLD.paused_at IS NOT NULL AND NEW.paused_at IS NULL) EXECUTE FUNCTION :schema.notify_queued();
  `,
};
