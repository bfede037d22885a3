import { ConflictError } from '../../errors.js';
import type { CancelOutcome, StoreParams } from '../store.js';
import type { Job } from '../../job/types.js';
import { cancelChildren } from './cancel-children.js';
import { date, type PgContext } from './context.js';
import { moveJobs } from './move.js';
import { rowToJob, type JobRow } from './rows.js';
import { cancelRequested } from './timeline.js';

/**
 * One statement answers a cancel in the usual case (one round trip and one commit, where a
 * transaction took four): a running job gets the request, a queued one moves to
 * `jobs_finished` cancelled, a finished one is read as it is. Each branch names the state
 * it acts on, so a job that changed state after the statement's snapshot (claimed, or
 * finished, by a transaction this one waited for) matches none of them while the
 * snapshot still shows it in `jobs`; the statement then runs again on a newer snapshot.
 * Each such round needs another transaction to have moved the job on. The job's
 * unfinished children (migration 24) are cancelled in the same statement (cancel-children.ts).
 */
const CANCEL_EVENT = cancelRequested('j.', '$2::timestamptz', '$4::text', '$3::text');
const CANCEL = `
  WITH requested AS (
    UPDATE :schema.jobs j SET cancel_requested_at = coalesce(cancel_requested_at, $2), cancel_reason = coalesce(cancel_reason, $3),
      timeline = ${CANCEL_EVENT.running}
    WHERE id = $1 AND state = 'running' RETURNING *
  ), ${moveJobs({
    name: 'cancelled',
    from: 'jobs',
    where: "j.id = $1 AND j.state = 'queued'",
    set: { state: "'cancelled'", cancel_requested_at: '$2', cancel_reason: '$3', finished_at: '$2', timeline: CANCEL_EVENT.queued },
  })}, ${cancelChildren('(SELECT id FROM requested UNION ALL SELECT id FROM cancelled)')}
  SELECT 'requested' AS outcome, * FROM requested
  UNION ALL SELECT 'cancelled', * FROM cancelled
  UNION ALL SELECT 'unchanged', * FROM :schema.jobs_finished WHERE id = $1
  UNION ALL SELECT 'absent', (NULL:::schema.jobs).* WHERE NOT EXISTS (SELECT 1 FROM :schema.jobs WHERE id = $1)
    AND NOT EXISTS (SELECT 1 FROM :schema.jobs_finished WHERE id = $1)`;

/** Rounds of {@link CANCEL} before a cancel gives up: each one lost a race with another transaction. */
const CANCEL_ROUNDS = 100;

export async function jobCancel(ctx: PgContext, { id, reason, by = null, now }: StoreParams<'jobCancel'>): Promise<{ job: Job; outcome: CancelOutcome } | null> {
  for (let round = 0; round < CANCEL_ROUNDS; round++) {
    const [row] = await ctx.query<JobRow & { outcome: CancelOutcome | 'absent' }>('cancel', CANCEL, [id, date(now), reason, by]);
    if (!row) continue; // the job moved on after this statement's snapshot: read it again
    if (row.outcome === 'absent') return null;
    return { job: rowToJob(row), outcome: row.outcome };
  }
  throw new ConflictError(`cancel of job ${id} lost ${CANCEL_ROUNDS} races with concurrent changes of it; try again`);
}
