import type { StoreParams } from '../store.js';
import { endAttempt } from '../constants.js';
import { date, type PgContext } from './context.js';
import { handBackSql } from './hand-back.js';
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
 * StoredWait): see {@link handBackSql}; a requeued job keeps its wait and is due per WAIT_DUE.
 */
const SUSPEND = handBackSql({
  input: 'unnest($1::bigint[], $2::int[], $4::timestamptz[], $5::jsonb[]) AS l(id, token, until, wait)',
  carry: ', l.until, l.wait',
  runAt: WAIT_DUE,
  timeline: WAITING,
  end: endAttempt('held.wait'),
});

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
