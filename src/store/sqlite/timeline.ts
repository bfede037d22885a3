import { CLEAR_LEASE } from '../constants.js';

/**
 * Appending to a job's stored timeline (migration 18) on SQLite: SQL expressions that
 * a transition's own UPDATE assigns to `timeline`, so an event costs no statement of
 * its own. Each event is a `json_object` of StoredJobEvent's fields; the values an
 * UPDATE's SET reads are the row's before the update (its attempt, lease and worker).
 */

/** The attempt the row runs now (StoredAttempt), as json_object arguments. */
const ATTEMPT = `'attempt', attempt, 'token', lease_token, 'worker', lease_owner, 'startedAt', started_at`;

/**
 * The row's timeline with one more event: `fields` are json_object arguments
 * (`'type', 'released', 'at', @now, …`), followed by the running attempt's unless
 * `attempt` is false. With `when` (an SQL condition), the event is appended only
 * where it holds.
 */
export function withEvent(fields: string, options: { attempt?: boolean; when?: string } = {}): string {
  const appended = `json_insert(timeline, '$[#]', json_object(${fields}${options.attempt === false ? '' : `, ${ATTEMPT}`}))`;
  return options.when ? `CASE WHEN ${options.when} THEN ${appended} ELSE timeline END` : appended;
}

/** `cancelRequested` by `@by` with `@reason` at `@now`: on a running job, the first request only (with its attempt). */
export const CANCEL_REQUESTED = {
  queued: withEvent(`'type', 'cancelRequested', 'at', @now, 'by', @by, 'reason', @reason`, { attempt: false }),
  running: withEvent(`'type', 'cancelRequested', 'at', @now, 'by', @by, 'reason', @reason`, { when: 'cancel_requested_at IS NULL' }),
};

/**
 * `retried` at `@now` (`fresh` from `@fresh`, 1 or 0): the outcome the finished row had, with its
 * last attempt (worker: last_worker, the lease is gone).
 */
const RETRIED_EVENT = withEvent(
  `'type', 'retried', 'at', @now, 'fresh', json(CASE WHEN @fresh THEN 'true' ELSE 'false' END), 'state', state, 'finishedAt', finished_at,
   'error', CASE WHEN state = 'failed' THEN json_extract(errors, '$[#-1].message') END, 'reason', cancel_reason,
   'attempt', attempt, 'token', lease_token, 'worker', last_worker, 'startedAt', started_at`,
  { attempt: false },
);

/** `cancelRequested` by "job <parent>" of a child cancelled with its parent (`@now`), as PostgreSQL's cancel-children.ts. */
const CHILD_CANCEL = withEvent(`'type', 'cancelRequested', 'at', @now, 'by', 'job ' || parent_id, 'reason', 'parent job ' || parent_id || ' cancelled'`, { attempt: false });
const CHILD_CANCEL_RUNNING = withEvent(`'type', 'cancelRequested', 'at', @now, 'by', 'job ' || parent_id, 'reason', 'parent job ' || parent_id || ' cancelled'`, { when: 'cancel_requested_at IS NULL' });

/**
 * Cancels the unfinished children (migration 24) of the jobs `@parents` (a JSON array of
 * ids) in the caller's transaction: queued → cancelled now, running → a cancel request,
 * each with a `cancelRequested` event by "job <parent>". One level: a child's own
 * children are not reached.
 */
export const CANCEL_CHILDREN = [
  `UPDATE jobs SET state = 'cancelled', cancel_requested_at = @now, cancel_reason = 'parent job ' || parent_id || ' cancelled', finished_at = @now,
    timeline = ${CHILD_CANCEL} WHERE parent_id IN (SELECT value FROM json_each(@parents)) AND state = 'queued'`,
  `UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, @now), cancel_reason = coalesce(cancel_reason, 'parent job ' || parent_id || ' cancelled'),
    timeline = ${CHILD_CANCEL_RUNNING} WHERE parent_id IN (SELECT value FROM json_each(@parents)) AND state = 'running'`,
];

/** Deletes the step log (migration 22) of job `@id` when the retry is fresh (`@fresh` 1): from scratch means every step runs again. */
export const FRESH_STEPS = 'DELETE FROM job_steps WHERE job_id = @id AND @fresh';

/**
 * The SET clause of a manual retry (`@now`, `@fresh` 1 or 0), as PostgreSQL's move.ts
 * RETRIED: queued now, attempts, start and outcome cleared, a `retried` event; a fresh
 * one also clears checkpoint and progress.
 */
export const RETRIED = `state = 'queued', run_at = @now, attempt = 0, result = NULL, started_at = NULL,
  checkpoint = CASE WHEN @fresh THEN NULL ELSE checkpoint END, progress = CASE WHEN @fresh THEN NULL ELSE progress END,
  cancel_requested_at = NULL, cancel_reason = NULL, finished_at = NULL, wait = NULL, timeline = ${RETRIED_EVENT}, ${CLEAR_LEASE}`;
