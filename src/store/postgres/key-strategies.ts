import type { TransactionClient } from '../../job/types.js';
import { droppedReason, hasKeyStrategy, strategyActor, supersededReason } from '../key-strategies.js';
import type { NewJob } from '../store.js';
import { date, type PgContext } from './context.js';
import { moveJobs } from './move.js';
import { cancelRequested } from './timeline.js';

/**
 * Applies the concurrency strategies of jobs just inserted (issue 12) in the insert's
 * transaction, in id order (a later job of a batch supersedes an earlier one); see
 * ConcurrencyStrategy. The insert's trigger holds the key's row lock until commit, so a
 * concurrent enqueue of the key waits at its own insert, and each statement here reads
 * a snapshot taken after the other enqueues of the key it waited for: two enqueues never
 * both keep a place the limit has room for once. `jobs` holds live jobs only.
 * @returns whether any job was changed (the caller then reads them again)
 */
export async function applyKeyStrategies(ctx: PgContext, db: TransactionClient, inserted: Array<{ id: number; job: NewJob }>, now: number): Promise<boolean> {
  let changed = false;
  for (const { id, job } of inserted) {
    if (!hasKeyStrategy(job)) continue;
    const strategy = job.concurrencyStrategy;
    const limit = job.concurrencyLimit ?? 1;
    const key = [job.queue, job.concurrencyKey, id];
    if (strategy === 'dropNewest') {
      const { rows } = await db.query(ctx.sql(`SELECT
          (SELECT count(*) FROM :schema.jobs WHERE state = 'queued' AND queue = $1 AND concurrency_key = $2 AND id < $3)
        + (SELECT count(*) FROM :schema.jobs WHERE state = 'running' AND queue = $1 AND concurrency_key = $2 AND id < $3) AS n`), key);
      if (Number((rows[0] as { n: string }).n) < limit) continue;
      await cancelQueued(ctx, db, [id], droppedReason(job.concurrencyKey, limit), strategyActor(job.concurrencyKey, strategy), now);
      changed = true;
      continue;
    }
    // keepLatest: every older queued job of the key; cancelInProgress: every older job of the
    // key beyond the newest `limit` − 1 not already being cancelled, queued or running.
    const older = strategy === 'keepLatest'
      ? `SELECT id FROM :schema.jobs WHERE state = 'queued' AND queue = $1 AND concurrency_key = $2 AND id < $3`
      : `SELECT id FROM :schema.jobs WHERE (state = 'queued' OR state = 'running') AND queue = $1 AND concurrency_key = $2 AND id < $3
           AND cancel_requested_at IS NULL
           ORDER BY id DESC OFFSET $4`;
    const ids = ((await db.query(ctx.sql(older), strategy === 'keepLatest' ? key : [...key, limit - 1])).rows as Array<{ id: string }>).map((r) => r.id);
    if (ids.length === 0) continue;
    const reason = supersededReason(id, job.concurrencyKey, strategy);
    // Queued ones first: one a claim started meanwhile is running by the second statement.
    const by = strategyActor(job.concurrencyKey, strategy);
    await cancelQueued(ctx, db, ids, reason, by, now);
    await db.query(ctx.sql(`UPDATE :schema.jobs j SET cancel_requested_at = coalesce(cancel_requested_at, $2), cancel_reason = coalesce(cancel_reason, $3),
      timeline = ${CANCEL_EVENT.running} WHERE id = ANY($1::bigint[]) AND state = 'running'`), [ids, date(now), reason, by]);
    changed = true;
  }
  return changed;
}

/** The `cancelRequested` event of a strategy's cancel: `$2` now, `$3` reason, `$4` who asked. */
const CANCEL_EVENT = cancelRequested('j.', '$2::timestamptz', '$4::text', '$3::text');

/** queued → cancelled now (moved to jobs_finished), with `reason`, asked by `by`; other states untouched. */
async function cancelQueued(ctx: PgContext, db: TransactionClient, ids: Array<number | string>, reason: string, by: string, now: number): Promise<void> {
  await db.query(ctx.sql(`WITH ${moveJobs({
    name: 'cancelled',
    from: 'jobs',
    where: "j.id = ANY($1::bigint[]) AND j.state = 'queued'",
    set: { state: "'cancelled'", cancel_requested_at: '$2', cancel_reason: '$3', finished_at: '$2', timeline: CANCEL_EVENT.queued },
    returning: 'id',
  })} SELECT count(*) FROM cancelled`), [ids, date(now), reason, by]);
}
