import type { Migration } from '../../migrate.js';

/**
 * Child jobs (issue 32), as SQLite's migration 24: `parent_id` and `parent_step` in both
 * job tables (`jobs_all` recreated), and fan-in: a statement trigger on `jobs_finished`
 * (every end of a job moves it there) makes each parent that waits for its children
 * (`wait.kind` 'children', `wait.ids`) due when a waited child ended failed or cancelled,
 * or none of them is left unfinished, in the transaction that ends the child, with a
 * NOTIFY `<schema>_jobs` at commit. The parents' rows are locked first, in id order:
 * a parent suspending at the same time (jobRelease locks its row in a statement of its
 * own first) either committed before (and is woken here) or reads the children after
 * this commit (and does not wait); of two children ending at once, the second to take
 * the lock sees the first's end.
 */
export const migration: Migration = {
  version: 24,
  name: 'job-children',
  sql: `
    ALTER TABLE :schema.jobs ADD COLUMN parent_id bigint, ADD COLUMN parent_step text;
    ALTER TABLE :schema.jobs_finished ADD COLUMN parent_id bigint, ADD COLUMN parent_step text;
    CREATE OR REPLACE VIEW :schema.jobs_all AS SELECT * FROM :schema.jobs UNION ALL SELECT * FROM :schema.jobs_finished;
    CREATE INDEX jobs_parent ON :schema.jobs (parent_id) WHERE parent_id IS NOT NULL;
    CREATE INDEX jobs_finished_parent ON :schema.jobs_finished (parent_id) WHERE parent_id IS NOT NULL;
    CREATE FUNCTION :schema.wake_parents() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      parents bigint[];
      woken integer;
    BEGIN
      SELECT array_agg(DISTINCT parent_id ORDER BY parent_id) INTO parents FROM ended WHERE parent_id IS NOT NULL;
      IF parents IS NULL THEN RETURN NULL; END IF;
      PERFORM 1 FROM :schema.jobs WHERE id = ANY(parents) ORDER BY id FOR UPDATE;
      UPDATE :schema.jobs p SET run_at = least(p.run_at, now())
      WHERE p.id = ANY(parents) AND p.state = 'queued' AND p.wait->>'kind' = 'children'
        AND (EXISTS (SELECT 1 FROM ended e WHERE e.parent_id = p.id AND e.state <> 'completed')
          OR NOT EXISTS (SELECT 1 FROM :schema.jobs c WHERE c.id IN (SELECT (jsonb_array_elements_text(p.wait->'ids'))::bigint)));
      GET DIAGNOSTICS woken = ROW_COUNT;
      IF woken > 0 THEN PERFORM pg_notify(':channel_jobs', ''); END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_child_ended AFTER INSERT ON :schema.jobs_finished
      REFERENCING NEW TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION :schema.wake_parents();
  `,
};
