import type { Migration } from '../../migrate.js';

/**
 * Finished jobs move out of the hot table (issue 11: a hot path independent of
 * history). `jobs` keeps only queued and running jobs; a job that completes, fails
 * for good or is cancelled is moved — deleted from `jobs` and inserted into
 * `jobs_finished`, in the statement that finishes it (src/store/postgres/move.ts) —
 * and a retry moves it back. So the table that claims, completions and lease
 * renewals work on, its indexes and every VACUUM of it stay the size of the live
 * work, however many finished jobs retention keeps: with history in `jobs`, each pass
 * read indexes holding every finished job (seconds at a million), and on a server
 * with autovacuum on the drain fell round after round (bench `history`).
 *
 * `jobs_all` is both tables as one (UNION ALL) for the reads that span them (get,
 * list, counts, bulk filters). The CHECK constraints make a finished row left in
 * `jobs`, or a live one in `jobs_finished`, an error rather than a silent drift;
 * PostgreSQL also uses them to skip the table a state filter excludes. The
 * finished indexes of migration 6 move to `jobs_finished`, whole rather than partial.
 * A schedule's tick has one job (migration 2's unique index, which now covers the
 * live jobs): `jobs_finished` has the same index, and a trigger refuses to insert a
 * tick's job into `jobs` while the tick's finished job exists — a check, not an index
 * across both tables, so an insert racing the move of the tick's own job is not seen;
 * the scheduler's compare-and-set, not this, is what enqueues a tick exactly once.
 * A column added to `jobs` later must be added to `jobs_finished` too, the view
 * recreated and the column listed in move.ts's JOB_COLUMNS (a test compares them).
 *
 * The existing finished rows are moved in this migration's transaction: one pass over
 * the table, once. Breaking: older code would write finished states into `jobs`,
 * which its CHECK constraint now refuses.
 */
export const migration: Migration = {
  version: 10,
  name: 'finished-jobs',
  breaking: true,
  sql: `
    CREATE TABLE :schema.jobs_finished (LIKE :schema.jobs INCLUDING DEFAULTS INCLUDING STORAGE);
    ALTER TABLE :schema.jobs_finished ALTER COLUMN id DROP DEFAULT,
      ADD PRIMARY KEY (id),
      ADD CONSTRAINT jobs_finished_state_check CHECK (state IN ('completed','failed','cancelled'));
    WITH moved AS (DELETE FROM :schema.jobs WHERE state IN ('completed','failed','cancelled') RETURNING *)
    INSERT INTO :schema.jobs_finished SELECT * FROM moved;
    DROP INDEX :schema.jobs_finished_state;
    DROP INDEX :schema.jobs_finished_queue;
    ALTER TABLE :schema.jobs DROP CONSTRAINT IF EXISTS jobs_state_check;
    ALTER TABLE :schema.jobs ADD CONSTRAINT jobs_live_state_check CHECK (state IN ('queued','running'));
    CREATE INDEX jobs_finished_state ON :schema.jobs_finished (state, finished_at, id);
    CREATE INDEX jobs_finished_queue ON :schema.jobs_finished (queue, finished_at, id);
    CREATE INDEX jobs_finished_list ON :schema.jobs_finished (state, id);
    CREATE UNIQUE INDEX jobs_finished_schedule_tick ON :schema.jobs_finished (schedule_name, scheduled_for)
      WHERE schedule_name IS NOT NULL AND scheduled_for IS NOT NULL;
    CREATE FUNCTION :schema.refuse_finished_tick() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM :schema.jobs_finished WHERE schedule_name = NEW.schedule_name AND scheduled_for = NEW.scheduled_for) THEN
        RAISE unique_violation USING MESSAGE = format('duplicate key value violates unique constraint "jobs_finished_schedule_tick": schedule %s has a finished job for the tick %s', NEW.schedule_name, NEW.scheduled_for),
          CONSTRAINT = 'jobs_finished_schedule_tick';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER jobs_tick_unique BEFORE INSERT ON :schema.jobs
      FOR EACH ROW WHEN (NEW.schedule_name IS NOT NULL AND NEW.scheduled_for IS NOT NULL) EXECUTE FUNCTION :schema.refuse_finished_tick();
    CREATE VIEW :schema.jobs_all AS SELECT * FROM :schema.jobs UNION ALL SELECT * FROM :schema.jobs_finished;
  `,
};
