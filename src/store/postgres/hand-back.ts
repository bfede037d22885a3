import { ENDED_ATTEMPT, moveJobs } from './move.js';

/**
 * The statement that hands running jobs back (jobRelease, jobSuspend): the rows of
 * `input` still held (`l.id`, `l.token` matching a running job) are locked and their cancel
 * request read from the locked (latest) version, so a request committed meanwhile sends
 * each job to exactly one branch: back to `queued` (attempt not counted) with `runAt`,
 * `timeline` and `end` (an attempt's end), or moved to `jobs_finished` `cancelled` (`$3`
 * now) with the same `timeline` event. Returns the ids handed back.
 * @param o.input - a row source aliased `l` with at least `id` and `token` (an unnest of the parameters)
 * @param o.carry - more columns of `l` kept in `held` for the SQL below (`, l.until`), or ''
 * @param o.runAt - the requeued row's new run_at (SQL, on row `j` and `held`)
 * @param o.timeline - the new timeline of row `j` (SQL)
 * @param o.end - the SET fragment that ends the attempt (endAttempt(…) or END_ATTEMPT)
 */
export function handBackSql(o: { input: string; carry: string; runAt: string; timeline: string; end: string }): string {
  return `
    WITH held AS (
      SELECT j.id, j.cancel_requested_at IS NOT NULL AS cancel${o.carry} FROM :schema.jobs j
      JOIN ${o.input} ON j.id = l.id AND j.lease_token = l.token
      WHERE j.state = 'running' FOR UPDATE OF j
    ), requeued AS (
      UPDATE :schema.jobs j SET state = 'queued', run_at = ${o.runAt}, attempt = j.attempt - 1, timeline = ${o.timeline}, ${o.end}
      FROM held WHERE j.id = held.id AND NOT held.cancel
      RETURNING j.id
    ), ${moveJobs({
      name: 'cancelled',
      from: 'jobs',
      using: 'held',
      where: 'j.id = held.id AND held.cancel',
      set: { state: "'cancelled'", finished_at: '$3', run_at: '$3', attempt: 'j.attempt - 1', timeline: o.timeline, ...ENDED_ATTEMPT },
      returning: 'id',
    })}
    SELECT id FROM requeued UNION ALL SELECT id FROM cancelled`;
}
