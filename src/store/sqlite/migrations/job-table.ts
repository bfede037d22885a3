/**
 * The CREATE TABLE of SQLite's job tables, in one place: `jobs` (the baseline) and
 * `jobs_finished` (migration 25) have the same columns in the same order, so that a row
 * moves between them whole (`INSERT INTO … SELECT *`) and `jobs_all` is their UNION ALL.
 * Imported by released migrations: never edited (docs/development.md, "Migrations");
 * a column added later is an ALTER TABLE of both tables in a new migration.
 */

/**
 * The CREATE TABLE statement of a job table.
 * @param name - `jobs` or `jobs_finished`
 * @param id - the id column's type and key, e.g. `INTEGER PRIMARY KEY AUTOINCREMENT`
 * @param states - the states its CHECK allows, as an SQL list: `'completed','failed','cancelled'`
 */
export function createJobTable(name: string, id: string, states: string): string {
  return `CREATE TABLE ${name} (
      id ${id},
      queue TEXT NOT NULL,
      task TEXT NOT NULL,
      payload TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN (${states})),
      priority INTEGER NOT NULL DEFAULT 0,
      run_at INTEGER NOT NULL,
      attempt INTEGER NOT NULL DEFAULT 0,
      max_attempts INTEGER NOT NULL,
      timeout_ms INTEGER,
      key TEXT,
      progress TEXT,
      checkpoint TEXT,
      result TEXT,
      errors TEXT NOT NULL DEFAULT '[]',
      cancel_requested_at INTEGER,
      cancel_reason TEXT,
      created_at INTEGER NOT NULL,
      started_at INTEGER,
      finished_at INTEGER,
      lease_owner TEXT,
      lease_expires_at INTEGER,
      lease_token INTEGER NOT NULL DEFAULT 0,
      schedule_name TEXT,
      scheduled_for INTEGER,
      concurrency_key TEXT,
      concurrency_limit INTEGER CHECK (concurrency_limit > 0),
      trace_context TEXT,
      timeline TEXT NOT NULL DEFAULT '[]',
      last_worker TEXT,
      wait TEXT,
      parent_id INTEGER,
      parent_step TEXT
    );`;
}

/** The columns of the job tables, in table order. */
export const JOB_COLUMNS = ['id', 'queue', 'task', 'payload', 'state', 'priority', 'run_at', 'attempt', 'max_attempts', 'timeout_ms', 'key', 'progress', 'checkpoint', 'result', 'errors', 'cancel_requested_at', 'cancel_reason', 'created_at', 'started_at', 'finished_at', 'lease_owner', 'lease_expires_at', 'lease_token', 'schedule_name', 'scheduled_for', 'concurrency_key', 'concurrency_limit', 'trace_context', 'timeline', 'last_worker', 'wait', 'parent_id', 'parent_step'] as const;
