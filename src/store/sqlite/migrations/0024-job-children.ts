import type { Migration } from '../../migrate.js';

/**
 * Child jobs (issue 32), as PostgreSQL's migration 24: `jobs.parent_id`, the job whose
 * run enqueued it (`ctx.enqueueChild`), and `parent_step`, the step identity that did
 * (the idempotency record is that step's row in `job_steps`, written in the same
 * transaction as the child). Fan-in: trigger `jobs_child_ended` makes a parent that waits
 * for its children (`wait.kind` 'children', `wait.ids`) due when a waited child ends
 * failed or cancelled, or the last of them ends: in the transaction that ends the child.
 */
export const migration: Migration = {
  version: 24,
  name: 'job-children',
  sql: `
    ALTER TABLE jobs ADD COLUMN parent_id INTEGER;
    ALTER TABLE jobs ADD COLUMN parent_step TEXT;
    CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;
    CREATE TRIGGER jobs_child_ended AFTER UPDATE OF state ON jobs
    WHEN new.parent_id IS NOT NULL AND new.state IN ('completed', 'failed', 'cancelled') AND old.state IN ('queued', 'running')
    BEGIN
      UPDATE jobs SET run_at = min(run_at, new.finished_at)
      WHERE id = new.parent_id AND state = 'queued' AND json_extract(wait, '$.kind') = 'children'
        AND (new.state <> 'completed' OR NOT EXISTS (SELECT 1 FROM json_each(jobs.wait, '$.ids') w JOIN jobs c ON c.id = w.value
          WHERE c.state IN ('queued', 'running')));
    END;
  `,
};
