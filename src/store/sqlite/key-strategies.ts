import type { NewJob } from '../store.js';
import type { SqliteContext } from './context.js';
import { supersededReason, droppedReason, hasKeyStrategy, strategyActor } from '../key-strategies.js';
import { CANCEL_REQUESTED } from './timeline.js';

/**
 * Applies the concurrency strategies of jobs just inserted (issue 12), in the insert's
 * write transaction, in id order (a later job of a batch supersedes an earlier one); see
 * ConcurrencyStrategy. SQLite runs one writer at a time, so what each statement counts
 * is what is there. @returns whether any job was changed (the caller then reads them again)
 */
export function applyKeyStrategies(ctx: SqliteContext, inserted: Array<{ id: number; job: NewJob }>, now: number): boolean {
  let changed = false;
  const live = `state IN ('queued','running') AND queue = @queue AND concurrency_key = @key`;
  for (const { id, job } of inserted) {
    if (!hasKeyStrategy(job)) continue;
    const strategy = job.concurrencyStrategy;
    const params = { id, now, queue: job.queue, key: job.concurrencyKey, limit: job.concurrencyLimit ?? 1, by: strategyActor(job.concurrencyKey, strategy) };
    if (strategy === 'dropNewest') {
      const count = (state: string) => (ctx.sql(`SELECT count(*) AS n FROM jobs WHERE state = '${state}' AND queue = @queue AND concurrency_key = @key AND id < @id`)
        .get(params) as { n: number }).n;
      const n = count('queued');
      const r = count('running');
      if (n + r < params.limit) continue;
      cancelQueued(ctx, 'id = @id', { ...params, reason: droppedReason(job.concurrencyKey, params.limit) });
      changed = true;
      continue;
    }
    const reason = supersededReason(id, job.concurrencyKey, strategy);
    // keepLatest: every older queued job of the key; cancelInProgress: every older job of the
    // key beyond the newest `limit` − 1 not already being cancelled, queued or running.
    const older = strategy === 'keepLatest'
      ? `state = 'queued' AND queue = @queue AND concurrency_key = @key AND id < @id`
      : `id IN (SELECT id FROM jobs WHERE ${live} AND id < @id AND cancel_requested_at IS NULL ORDER BY id DESC LIMIT -1 OFFSET @limit - 1)`;
    const targets = ctx.sql(`SELECT id FROM jobs WHERE ${older}`).all(params) as Array<{ id: number }>;
    if (targets.length === 0) continue;
    const ids = JSON.stringify(targets.map((t) => t.id));
    cancelQueued(ctx, `state = 'queued' AND id IN (SELECT value FROM json_each(@ids))`, { ...params, ids, reason });
    ctx.sql(`UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, @now), cancel_reason = coalesce(cancel_reason, @reason),
      timeline = ${CANCEL_REQUESTED.running} WHERE state = 'running' AND id IN (SELECT value FROM json_each(@ids))`).run({ now, ids, reason, by: params.by });
    changed = true;
  }
  return changed;
}

function cancelQueued(ctx: SqliteContext, where: string, params: Record<string, unknown>): void {
  ctx.sql(`UPDATE jobs SET state = 'cancelled', cancel_requested_at = @now, cancel_reason = @reason, finished_at = @now,
    timeline = ${CANCEL_REQUESTED.queued} WHERE ${where}`).run(params);
}
