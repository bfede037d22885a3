import type { StoreParams } from '../store.js';
import { endAttempt } from '../constants.js';
import { date, type PgContext } from './context.js';
import { ENDED_ATTEMPT, moveJobs } from './move.js';
import { ms, withEvent } from './timeline.js';

/**
 * When a suspended job `j` of `held` (its `wait`, the StoredWait, and `until`, the wait's
 * end) is due (`$3` now): at once when it waits for a message on a topic that already has
 * one pending (sent while it ran), or for children that have all ended or of which one
 * failed or was cancelled; else at the wait's end. A send or a child's end committed after
 * the suspension wakes the job itself (messages.ts; trigger `jobs_child_ended`, migration
 * 24); one committed before it is seen here: jobSuspend locks the rows in a statement of
 * its own first, and a send or a child's end locks the job's row too, so this statement's
 * snapshot is taken after them.
 */
const WAIT_DUE = `CASE
  WHEN held.wait->>'kind' = 'message' AND EXISTS (SELECT 1 FROM :schema.job_messages m
    WHERE m.job_id = j.id AND m.topic = held.wait->>'topic' AND m.taken_at IS NULL) THEN $3::timestamptz
  WHEN held.wait->>'kind' = 'children' AND (
    NOT EXISTS (SELECT 1 FROM :schema.jobs c WHERE c.id IN (SELECT (jsonb_array_elements_text(held.wait->'ids'))::bigint))
    OR EXISTS (SELECT 1 FROM :schema.jobs_finished c WHERE c.id IN (SELECT (jsonb_array_elements_text(held.wait->'ids'))::bigint)
      AND c.state IN ('failed', 'cancelled'))) THEN $3::timestamptz
  ELSE held.until END`;

/** The `waiting` timeline event of row `j` suspended at `$3`. */
const WAITING = withEvent(`'type', 'waiting', 'at', ${ms('$3::timestamptz')}, 'runAt', ${ms(WAIT_DUE)}, 'wait', held.wait`, { row: 'j.' });

/**
 * jobSuspend's statement (`$1` ids, `$2` tokens, `$3` now, `$4` each wait's end, `$5` each
 * StoredWait): the rows still held are locked and their cancel request read from the locked
 * (latest) version, so a request committed meanwhile sends its job to exactly one branch:
 * queued with its wait, or moved to `jobs_finished` cancelled.
 */
const SUSPEND = `
  WITH held AS (
    SELECT j.id, j.cancel_requested_at IS NOT NULL AS cancel, l.until, l.wait FROM :schema.jobs j
    JOIN unnest($1::bigint[], $2::int[], $4::timestamptz[], $5::jsonb[]) AS l(id, token, until, wait) ON j.id = l.id AND j.lease_token = l.token
    WHERE j.state = 'running' FOR UPDATE OF j
  ), requeued AS (
    UPDATE :schema.jobs j SET state = 'queued', run_at = ${WAIT_DUE}, attempt = j.attempt - 1, timeline = ${WAITING}, ${endAttempt('held.wait')}
    FROM held WHERE j.id = held.id AND NOT held.cancel
    RETURNING j.id
  ), ${moveJobs({
    name: 'cancelled',
    from: 'jobs',
    using: 'held',
    where: 'j.id = held.id AND held.cancel',
    set: { state: "'cancelled'", finished_at: '$3', run_at: '$3', attempt: 'j.attempt - 1', timeline: WAITING, ...ENDED_ATTEMPT },
    returning: 'id',
  })}
  SELECT id FROM requeued UNION ALL SELECT id FROM cancelled`;

export async function jobSuspend(ctx: PgContext, { items, now }: StoreParams<'jobSuspend'>): Promise<number[]> {
  if (items.length === 0) return [];
  const ids = items.map((i) => i.id);
  const values = [ids, items.map((i) => i.token), date(now), items.map((i) => date(i.runAt)), items.map((i) => i.wait)];
  // The rows are locked in a statement of their own first (see WAIT_DUE).
  return ctx.transaction(async (client) => {
    await client.query(ctx.sql("SELECT 1 FROM :schema.jobs WHERE id = ANY($1::bigint[]) AND state = 'running' FOR UPDATE"), [ids]);
    return (await client.query<{ id: string }>(ctx.sql(SUSPEND), values)).rows.map((r) => Number(r.id));
  });
}
