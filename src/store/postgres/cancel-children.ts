import { moveJobs } from './move.js';
import { cancelRequested } from './timeline.js';

/** The `cancelRequested` event of a child cancelled with its parent (`$2` now), by "job <parent>". */
const CHILD_EVENT = cancelRequested('j.', '$2::timestamptz', "'job ' || j.parent_id", "'parent job ' || j.parent_id || ' cancelled'");
const CHILD_REASON = "'parent job ' || j.parent_id || ' cancelled'";

/**
 * CTEs that cancel the unfinished children (migration 24) of the parents `parents` (an SQL
 * list expression, e.g. `(SELECT id FROM cancelled)`) in the statement that cancels them:
 * a running child gets a cancel request (its worker aborts it within ms, as for any
 * cancel: the row's trigger NOTIFYs), a queued one moves to `jobs_finished` cancelled,
 * each with a `cancelRequested` event by "job <parent>". `$2` is now. One level: a
 * child's own children are not reached (a grandchild keeps running).
 */
export const cancelChildren = (parents: string): string => `children_requested AS (
    UPDATE :schema.jobs j SET cancel_requested_at = coalesce(j.cancel_requested_at, $2), cancel_reason = coalesce(j.cancel_reason, ${CHILD_REASON}),
      timeline = ${CHILD_EVENT.running}
    WHERE j.parent_id IN ${parents} AND j.state = 'running' RETURNING j.id
  ), ${moveJobs({
    name: 'children_cancelled',
    from: 'jobs',
    where: `j.parent_id IN ${parents} AND j.state = 'queued'`,
    set: { state: "'cancelled'", cancel_requested_at: '$2', cancel_reason: CHILD_REASON, finished_at: '$2', timeline: CHILD_EVENT.queued },
    returning: 'id',
  })}`;
