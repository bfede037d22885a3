/**
 * Appending to a job's stored timeline (migration 18) on PostgreSQL: SQL expressions
 * that a transition's own UPDATE, or the `set` of its move (move.ts), assigns to
 * `timeline`, so an event costs no statement of its own. Each event is a
 * `jsonb_build_object` of StoredJobEvent's fields, times in ms since the epoch.
 */

/** A timestamptz expression as ms since the epoch (bigint; NULL stays NULL). */
export const ms = (expression: string): string => `(extract(epoch FROM ${expression}) * 1000)::bigint`;

/** The attempt row `r` (an alias with its dot, or '') runs now (StoredAttempt), as jsonb_build_object arguments. */
const attempt = (r: string): string => `'attempt', ${r}attempt, 'token', ${r}lease_token, 'worker', ${r}lease_owner, 'startedAt', ${ms(`${r}started_at`)}`;

/**
 * Row `row`'s timeline (`row`: an alias with its dot, e.g. `'j.'`; default none) with
 * one more event: `fields` are jsonb_build_object arguments (`'type', 'released',
 * 'at', …`), followed by the running attempt's unless `attempt` is false. With `when`
 * (an SQL condition), the event is appended only where it holds.
 */
export function withEvent(fields: string, options: { row?: string; attempt?: boolean; when?: string } = {}): string {
  const r = options.row ?? '';
  const appended = `${r}timeline || jsonb_build_array(jsonb_build_object(${fields}${options.attempt === false ? '' : `, ${attempt(r)}`}))`;
  return options.when ? `CASE WHEN ${options.when} THEN ${appended} ELSE ${r}timeline END` : appended;
}

/**
 * `cancelRequested` at `now` by `by` with `reason` (SQL expressions): on a queued row
 * `r` (which it ends), or on a running one (its first request only, with its attempt).
 */
export function cancelRequested(r: string, now: string, by: string, reason: string): { queued: string; running: string } {
  const fields = `'type', 'cancelRequested', 'at', ${ms(now)}, 'by', ${by}, 'reason', ${reason}`;
  return {
    queued: withEvent(fields, { row: r, attempt: false }),
    running: withEvent(fields, { row: r, when: `${r}cancel_requested_at IS NULL` }),
  };
}

/** `retried` at `now` of finished row `j` (`fresh`: a boolean expression): the outcome it had, with its last attempt (worker: last_worker, the lease is gone). */
export const retriedEvent = (now: string, fresh: string): string =>
  withEvent(
    `'type', 'retried', 'at', ${ms(now)}, 'fresh', ${fresh}, 'state', j.state, 'finishedAt', ${ms('j.finished_at')},
     'error', CASE WHEN j.state = 'failed' THEN j.errors -> -1 ->> 'message' END, 'reason', j.cancel_reason,
     'attempt', j.attempt, 'token', j.lease_token, 'worker', j.last_worker, 'startedAt', ${ms('j.started_at')}`,
    { row: 'j.', attempt: false },
  );
