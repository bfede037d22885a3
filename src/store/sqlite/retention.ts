import { checkDeleteBatch } from '../delete-batch.js';
import type { FinishedState, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';

/** Deleting finished jobs on SQLite (retention, purges), all in `jobs_finished` (migration 25); see the Store interface for each contract. */

/**
 * Free pages handed back to the file system after a delete batch, at most: a batch
 * of 10,000 jobs frees far fewer. Only files created with incremental auto-vacuum
 * (every file Baton creates) can give pages back; for older files it does nothing
 * and SQLite reuses the free pages for new jobs instead.
 */
const RECLAIM_PAGES = 4096;

/**
 * One branch per state, each reading at most `limit` rows of the index of finished
 * jobs by state in (finished_at, id) order; the union is cut to the oldest `limit`.
 * So a batch reads states × limit index entries at most, whatever the table holds.
 */
function finishedSelect(states: FinishedState[], p: StoreParams<'jobDeleteFinished'>): string {
  const where = ['finished_at IS NOT NULL'];
  if (p.finishedBefore !== undefined) where.push('finished_at < @finishedBefore');
  if (p.createdBefore !== undefined) where.push('created_at < @createdBefore');
  if (p.queue !== undefined) where.push('queue = @queue');
  if (p.task !== undefined) where.push('task = @task');
  if (p.exceptQueues?.length) where.push('queue NOT IN (SELECT value FROM json_each(@exceptQueues))');
  if (p.exceptTasks?.length) where.push('task NOT IN (SELECT value FROM json_each(@exceptTasks))');
  const branches = states.map((_, i) => `SELECT * FROM (SELECT id, finished_at FROM jobs_finished WHERE state = @s${i} AND ${where.join(' AND ')} ORDER BY finished_at, id LIMIT @limit)`);
  return `SELECT id FROM (${branches.join(' UNION ALL ')}) ORDER BY finished_at, id LIMIT @limit`;
}

/** Deletes, then (same transaction) hands free pages back to the file system. */
function deleteAndReclaim(ctx: SqliteContext, text: string, values: Record<string, unknown>): number {
  return ctx.transaction(() => {
    const deleted = ctx.sql(text).run(values).changes;
    if (deleted > 0) ctx.db.pragma(`incremental_vacuum(${RECLAIM_PAGES})`);
    return deleted;
  });
}

export async function jobDeleteFinished(ctx: SqliteContext, p: StoreParams<'jobDeleteFinished'>): Promise<number> {
  checkDeleteBatch('jobDeleteFinished', p);
  const states = [...new Set(p.states)];
  if (states.length === 0) return 0;
  const values: Record<string, unknown> = { limit: p.limit };
  states.forEach((s, i) => (values[`s${i}`] = s));
  if (p.finishedBefore !== undefined) values.finishedBefore = p.finishedBefore;
  if (p.createdBefore !== undefined) values.createdBefore = p.createdBefore;
  if (p.queue !== undefined) values.queue = p.queue;
  if (p.task !== undefined) values.task = p.task;
  if (p.exceptQueues?.length) values.exceptQueues = JSON.stringify(p.exceptQueues);
  if (p.exceptTasks?.length) values.exceptTasks = JSON.stringify(p.exceptTasks);
  return deleteAndReclaim(ctx, `DELETE FROM jobs_finished WHERE id IN (${finishedSelect(states, p)})`, values);
}

export async function jobDeleteFinishedBeyond(ctx: SqliteContext, { queue, keep, limit }: StoreParams<'jobDeleteFinishedBeyond'>): Promise<number> {
  checkDeleteBatch('jobDeleteFinishedBeyond', { limit, keep });
  // The keep-th newest finished job of the queue is the boundary; everything older goes.
  // Fewer than `keep` finished jobs: the boundary is NULL and nothing matches.
  const older = keep === 0
    ? ''
    : `AND (finished_at, id) < (SELECT finished_at, id FROM jobs_finished INDEXED BY jobs_finished_queue WHERE queue = @queue AND finished_at IS NOT NULL
         ORDER BY finished_at DESC, id DESC LIMIT 1 OFFSET @offset)`;
  return deleteAndReclaim(ctx, `DELETE FROM jobs_finished WHERE id IN (
      SELECT id FROM jobs_finished INDEXED BY jobs_finished_queue
      WHERE queue = @queue AND finished_at IS NOT NULL AND state IN ('completed', 'failed', 'cancelled') ${older}
      ORDER BY finished_at, id LIMIT @limit)`, keep === 0 ? { queue, limit } : { queue, limit, offset: keep - 1 });
}
