import { retriedEvent } from './timeline.js';

/**
 * Moving jobs between PostgreSQL's two job tables (migration 10): `jobs` holds the
 * queued and running ones, `jobs_finished` the completed, failed and cancelled ones.
 * Finishing a job moves it out of `jobs`; retrying a finished one moves it back.
 */

/**
 * The columns of `jobs` and `jobs_finished`, in table order, with their types: a move
 * names each one (a test compares this list with both tables).
 */
export const JOB_COLUMNS = {
  id: 'bigint',
  queue: 'text',
  task: 'text',
  payload: 'json',
  state: 'text',
  priority: 'integer',
  run_at: 'timestamptz',
  attempt: 'integer',
  max_attempts: 'integer',
  timeout_ms: 'integer',
  key: 'text',
  progress: 'jsonb',
  checkpoint: 'json',
  result: 'json',
  errors: 'jsonb',
  cancel_requested_at: 'timestamptz',
  cancel_reason: 'text',
  created_at: 'timestamptz',
  started_at: 'timestamptz',
  finished_at: 'timestamptz',
  lease_owner: 'text',
  lease_expires_at: 'timestamptz',
  lease_token: 'integer',
  schedule_name: 'text',
  scheduled_for: 'timestamptz',
  concurrency_key: 'text',
  concurrency_limit: 'integer',
  trace_context: 'json',
  timeline: 'jsonb',
  last_worker: 'text',
  wait: 'jsonb',
  parent_id: 'bigint',
  parent_step: 'text',
} as const;

/** A column of the job tables. */
export type JobColumn = keyof typeof JOB_COLUMNS;

/** The `set` of a move that clears the lease holder and expiry (the token stays), as CLEAR_LEASE does in an UPDATE. */
export const CLEARED_LEASE: Partial<Record<JobColumn, string>> = { lease_owner: 'NULL', lease_expires_at: 'NULL' };

/** The `set` of a move that ends the running attempt: the lease cleared and its holder kept as `last_worker`, as END_ATTEMPT does in an UPDATE. */
export const ENDED_ATTEMPT: Partial<Record<JobColumn, string>> = { last_worker: 'j.lease_owner', wait: 'NULL', ...CLEARED_LEASE };

/**
 * The `set` of a finished job moved back to `jobs` by a retry (`$2` now, `$3` fresh): queued,
 * due now, attempts, start and outcome cleared, the outcome it had kept in a `retried`
 * event; a fresh one also clears checkpoint and progress.
 */
export const RETRIED: Partial<Record<JobColumn, string>> = {
  timeline: retriedEvent('$2::timestamptz', '$3::boolean'),
  state: "'queued'",
  run_at: '$2',
  attempt: '0',
  started_at: 'NULL',
  result: 'NULL',
  checkpoint: 'CASE WHEN $3::boolean THEN NULL ELSE j.checkpoint END',
  progress: 'CASE WHEN $3::boolean THEN NULL ELSE j.progress END',
  cancel_requested_at: 'NULL',
  cancel_reason: 'NULL',
  finished_at: 'NULL',
  wait: 'NULL',
  ...CLEARED_LEASE,
};

/**
 * A CTE that deletes the step log (migration 22) of the jobs a fresh retry moved back
 * (`$3` fresh; `retried` the move's CTE, returning `id`): from scratch means every step
 * runs again. A retry that is not fresh keeps the log: completed steps are replayed.
 */
export const FRESH_STEPS = "fresh_steps AS (DELETE FROM :schema.job_steps s USING retried r WHERE $3::boolean AND s.job_id = r.id)";

/** What {@link moveJobs} moves, and how. */
export interface JobMove {
  /** The CTE's name; its rows are the moved jobs as inserted (`returning`). */
  name: string;
  /** The table the rows leave; they go to the other one. */
  from: 'jobs' | 'jobs_finished';
  /** More FROM items for `where` (a DELETE's USING list); the moved table is `j`. */
  using?: string;
  /** Which rows move (on `j` and the `using` items). */
  where: string;
  /** New values by column, SQL expressions over `j` and `using` (each cast to its column's type); the others are kept. */
  set: Partial<Record<JobColumn, string>>;
  /** What the CTE returns of the inserted rows. @defaultValue `*` */
  returning?: string;
}

/**
 * Two CTEs (`<name>_taken`, `<name>`) that move the matching rows: a DELETE from one
 * table returning the rows with `set` applied, and an INSERT of them into the other,
 * in one statement, so no snapshot ever sees a job in both tables or in neither. A
 * concurrent write to a moved row waits for the move, then finds no row (READ
 * COMMITTED: a deleted row is skipped) — the same answer as a row whose state no
 * longer matches. Callers name the CTE in a statement's WITH list.
 */
export function moveJobs(move: JobMove): string {
  const to = move.from === 'jobs' ? 'jobs_finished' : 'jobs';
  const columns = Object.keys(JOB_COLUMNS) as JobColumn[];
  const values = columns.map((c) => {
    const value = move.set[c];
    return value === undefined ? `j.${c}` : `(${value})::${JOB_COLUMNS[c]} AS ${c}`;
  });
  return `${move.name}_taken AS (
      DELETE FROM :schema.${move.from} j${move.using ? ` USING ${move.using}` : ''} WHERE ${move.where}
      RETURNING ${values.join(', ')}
    ), ${move.name} AS (
      INSERT INTO :schema.${to} (${columns.join(', ')}) SELECT ${columns.join(', ')} FROM ${move.name}_taken
      RETURNING ${move.returning ?? '*'}
    )`;
}
