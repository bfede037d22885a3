import type { Migration } from '../../migrate.js';
import { createJobTable, JOB_COLUMNS } from './job-table.js';

/** The columns of `jobs` and `jobs_finished`, in table order. */
const COLUMNS = JOB_COLUMNS.join(', ');

/** {@link COLUMNS} as `NEW.<column>`: the values of a row a trigger moves. */
const NEW_VALUES = JOB_COLUMNS.map((c) => `NEW.${c}`).join(', ');

/**
 * SQLite keeps finished jobs apart (issue 33), as PostgreSQL's `jobs_finished` does:
 * `jobs` holds the queued and running ones, `jobs_finished` the completed, failed and
 * cancelled ones, so the table and indexes that claims, completions and lease renewals
 * write stay the size of the live work. Existing finished rows move in this migration.
 *
 * - A finishing UPDATE (fail, cancel, release, rescue, a strategy's or a parent's cancel)
 *   moves by trigger: `jobs_state_change` copies the row as updated into `jobs_finished`
 *   and deletes it from `jobs` in the same statement, whose RETURNING still answers
 *   (SQLite returns what its own UPDATE wrote). The completion, the hot path, moves by
 *   statements instead (sqlite/jobs.ts: INSERT … SELECT, then DELETE), so its row is
 *   written once. A retry moves a row back (sqlite/move.ts).
 * - Off the hot table: `jobs_state (state, id)` (written on every state change; live
 *   listings by state use the partial indexes), and the finished indexes by state and by
 *   queue, now on `jobs_finished` with `jobs_finished_list (state, id)` for listings.
 *   `jobs_all` is both tables as one, for the reads that span them.
 * - Triggers, checked against the new layout. SQLite runs a trigger's program for every
 *   row of a statement, WHEN false or not, so the hot path fires as few as it can:
 *   - `jobs_state_change` replaces `jobs_key_state` and `jobs_rate_start` on a change of
 *     state (one program a claimed row, where a claim ran three): the key counts as
 *     before, and the move. The rate starts are written by the claim (claimFlow's
 *     RATE_STARTS), the only writer of 'running', where a rate applies.
 *   - `jobs_key_insert` and `jobs_key_delete` are unchanged: a moved row leaves `jobs`
 *     either with a finished state (the trigger's move: already counted by the UPDATE,
 *     so not again) or running (the completion: counted by the DELETE); a retry's
 *     INSERT of the finished row counts nothing, its UPDATE to queued counts it.
 *   - `job_steps_deleted` is on `jobs_finished` only, and skips a row that moves back
 *     (it is in `jobs` by then); a move's DELETE from `jobs` runs `jobs_key_delete`
 *     alone, and deleting a queued job deletes its steps and messages itself
 *     (sqlite/job-bulk.ts).
 *   - `jobs_child_ended` fires when a child arrives in `jobs_finished`. During the
 *     completion's move the rows it copied are still in `jobs` until its DELETE: a
 *     child counts as live only when it is not in `jobs_finished` yet (so the last of
 *     several children completed in one batch wakes the parent).
 * - A schedule's tick stays unique across both tables, as on PostgreSQL: unique indexes
 *   `jobs_schedule_tick` on `jobs` and `jobs_finished_schedule_tick` on `jobs_finished`,
 *   and `jobs_tick_finished` refuses (a UNIQUE error, as PostgreSQL's
 *   `refuse_finished_tick`) an insert into `jobs` of a tick whose finished job exists,
 *   unless it is that same job moving back. The scheduler's compare-and-set is what
 *   enqueues a tick once; this keeps any other writer from a second copy.
 *
 * Breaking: code before it reads finished jobs from `jobs` and names indexes now gone.
 */
export const migration: Migration = {
  version: 25,
  name: 'finished-jobs',
  breaking: true,
  sql: `
    ${createJobTable('jobs_finished', 'INTEGER PRIMARY KEY', "'completed','failed','cancelled'")}

    -- The finished rows move before the triggers that would react to it are replaced.
    DROP TRIGGER job_steps_deleted;
    DROP TRIGGER jobs_child_ended;
    INSERT INTO jobs_finished (${COLUMNS}) SELECT ${COLUMNS} FROM jobs WHERE state IN ('completed','failed','cancelled');
    DELETE FROM jobs WHERE state IN ('completed','failed','cancelled');

    DROP INDEX jobs_state;
    DROP INDEX jobs_finished_state;
    DROP INDEX jobs_finished_queue;
    CREATE INDEX jobs_finished_state ON jobs_finished (state, finished_at, id);
    CREATE INDEX jobs_finished_queue ON jobs_finished (queue, finished_at, id);
    CREATE INDEX jobs_finished_list ON jobs_finished (state, id);
    CREATE UNIQUE INDEX jobs_finished_schedule_tick ON jobs_finished (schedule_name, scheduled_for)
      WHERE schedule_name IS NOT NULL AND scheduled_for IS NOT NULL;
    CREATE INDEX jobs_finished_parent ON jobs_finished (parent_id) WHERE parent_id IS NOT NULL;
    CREATE VIEW jobs_all AS SELECT * FROM jobs UNION ALL SELECT * FROM jobs_finished;

    -- One trigger on a change of state where there were two (jobs_key_state, jobs_rate_start) and a third
    -- (the move): SQLite runs each trigger's program once per row, WHEN false or not, so a claim paid three.
    -- The rate starts are now written by the claim itself (sqlite/jobs.ts, claimFlow), the only writer of 'running'.
    DROP TRIGGER jobs_key_state;
    DROP TRIGGER jobs_rate_start;
    CREATE TRIGGER jobs_state_change AFTER UPDATE OF state ON jobs
      WHEN OLD.state <> NEW.state
    BEGIN
      INSERT INTO concurrency_keys (queue, key, queued, running, max_running)
        SELECT NEW.queue, NEW.concurrency_key, 0, 0, NEW.concurrency_limit WHERE NEW.concurrency_key IS NOT NULL AND NEW.state IN ('queued', 'running')
        ON CONFLICT (queue, key) DO NOTHING;
      UPDATE concurrency_keys SET
          queued = queued + (NEW.state = 'queued') - (OLD.state = 'queued'),
          running = running + (NEW.state = 'running') - (OLD.state = 'running'),
          last_started_at = CASE WHEN NEW.state = 'running' THEN NEW.started_at ELSE last_started_at END
        WHERE NEW.concurrency_key IS NOT NULL AND queue = NEW.queue AND key = NEW.concurrency_key;
      DELETE FROM concurrency_keys WHERE NEW.concurrency_key IS NOT NULL AND queue = NEW.queue AND key = NEW.concurrency_key AND queued = 0 AND running = 0;
      INSERT INTO jobs_finished (${COLUMNS}) SELECT ${NEW_VALUES} WHERE NEW.state IN ('completed','failed','cancelled');
      DELETE FROM jobs WHERE NEW.state IN ('completed','failed','cancelled') AND id = NEW.id;
    END;
    CREATE TRIGGER job_steps_deleted AFTER DELETE ON jobs_finished
      WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE id = OLD.id)
    BEGIN
      DELETE FROM job_steps WHERE job_id = OLD.id;
      DELETE FROM job_messages WHERE job_id = OLD.id;
    END;
    CREATE TRIGGER jobs_child_ended AFTER INSERT ON jobs_finished
      WHEN NEW.parent_id IS NOT NULL
    BEGIN
      UPDATE jobs SET run_at = min(run_at, NEW.finished_at)
      WHERE id = NEW.parent_id AND state = 'queued' AND json_extract(wait, '$.kind') = 'children'
        AND (NEW.state <> 'completed' OR NOT EXISTS (SELECT 1 FROM json_each(jobs.wait, '$.ids') w JOIN jobs c ON c.id = w.value
          WHERE c.state IN ('queued', 'running') AND NOT EXISTS (SELECT 1 FROM jobs_finished f WHERE f.id = c.id)));
    END;
    CREATE TRIGGER jobs_tick_finished BEFORE INSERT ON jobs
      WHEN NEW.schedule_name IS NOT NULL AND NEW.scheduled_for IS NOT NULL AND EXISTS (SELECT 1 FROM jobs_finished f
        WHERE f.schedule_name = NEW.schedule_name AND f.scheduled_for = NEW.scheduled_for AND f.id IS NOT NEW.id)
    BEGIN
      SELECT RAISE(ABORT, 'UNIQUE constraint failed: jobs_finished.schedule_name, jobs_finished.scheduled_for (the tick has a finished job)');
    END;
  `,
};
