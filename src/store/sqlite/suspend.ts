import type { StoreParams } from '../store.js';
import { endAttempt } from '../constants.js';
import type { SqliteContext } from './context.js';
import { withEvent } from './timeline.js';

/**
 * When a suspended job is due (`@wait`, the JSON of its StoredWait, `@runAt` its end):
 * at once when it waits for a message on a topic that already has one pending (sent
 * while it ran), or for children that have all ended or of which one failed or was
 * cancelled; else at the wait's end. A send or a child's end after this commit wakes it
 * itself (jobMessageSend; trigger `jobs_child_ended`, migration 24).
 */
const WAIT_DUE = `CASE
  WHEN json_extract(@wait, '$.kind') = 'message' AND EXISTS (SELECT 1 FROM job_messages m
    WHERE m.job_id = jobs.id AND m.topic = json_extract(@wait, '$.topic') AND m.taken_at IS NULL) THEN @now
  WHEN json_extract(@wait, '$.kind') = 'children' AND (
    NOT EXISTS (SELECT 1 FROM json_each(@wait, '$.ids') w JOIN jobs c ON c.id = w.value WHERE c.state IN ('queued', 'running'))
    OR EXISTS (SELECT 1 FROM json_each(@wait, '$.ids') w JOIN jobs_finished c ON c.id = w.value WHERE c.state IN ('failed', 'cancelled'))) THEN @now
  ELSE @runAt END`;

/**
 * One job's suspension (`@id`, `@token`, `@now`, `@runAt`, `@wait`): queued with its wait
 * and a `waiting` event, or cancelled (with the same event) when a cancel was requested.
 */
const SUSPEND = `UPDATE jobs SET
    state = CASE WHEN cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
    finished_at = CASE WHEN cancel_requested_at IS NULL THEN NULL ELSE @now END,
    run_at = CASE WHEN cancel_requested_at IS NULL THEN ${WAIT_DUE} ELSE @now END, attempt = attempt - 1,
    timeline = ${withEvent(`'type', 'waiting', 'at', @now, 'runAt', ${WAIT_DUE}, 'wait', json(@wait)`)},
    ${endAttempt('CASE WHEN cancel_requested_at IS NULL THEN @wait END')}
  WHERE id = @id AND lease_token = @token AND state = 'running'
  RETURNING id`;

export async function jobSuspend(ctx: SqliteContext, { items, now }: StoreParams<'jobSuspend'>): Promise<number[]> {
  if (items.length === 0) return [];
  return ctx.transaction(() => {
    const statement = ctx.sql(SUSPEND);
    return items.flatMap(({ id, token, runAt, wait }) => (statement.all({ id, token, now, runAt, wait }) as Array<{ id: number }>).map((r) => r.id));
  });
}
