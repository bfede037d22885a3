import { checkDeleteBatch } from '../delete-batch.js';
import type { StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';

/**
 * Deleting finished jobs on PostgreSQL (retention, purges), all in `jobs_finished`
 * (migration 10); see the Store interface for each contract.
 */

/**
 * Deletes the picked ids and counts them. Picks lock their rows with SKIP LOCKED: a
 * row another transaction is changing (a retry moving it back to `jobs`) is left for
 * the next batch, and a picked row cannot change before it is deleted. The jobs' steps and
 * messages (migration 22) go in the same statement.
 */
async function deletePicked(ctx: PgContext, name: string, pick: string, values: unknown[]): Promise<number> {
  const rows = await ctx.query<{ count: number }>(name, `
    WITH picked AS (${pick}),
    deleted AS (DELETE FROM :schema.jobs_finished j USING picked WHERE j.id = picked.id RETURNING j.id),
    steps_deleted AS (DELETE FROM :schema.job_steps s USING deleted WHERE s.job_id = deleted.id),
    messages_deleted AS (DELETE FROM :schema.job_messages m USING deleted WHERE m.job_id = deleted.id)
    SELECT count(*)::int AS count FROM deleted`, values);
  return rows[0]!.count;
}

export async function jobDeleteFinished(ctx: PgContext, p: StoreParams<'jobDeleteFinished'>): Promise<number> {
  checkDeleteBatch('jobDeleteFinished', p);
  const states = [...new Set(p.states)];
  if (states.length === 0) return 0;
  const values: unknown[] = [p.limit, states];
  const param = (value: unknown) => `$${values.push(value)}`;
  const where = ['true'];
  if (p.finishedBefore !== undefined) where.push(`finished_at < ${param(date(p.finishedBefore))}`);
  if (p.createdBefore !== undefined) where.push(`created_at < ${param(date(p.createdBefore))}`);
  if (p.queue !== undefined) where.push(`queue = ${param(p.queue)}`);
  if (p.task !== undefined) where.push(`task = ${param(p.task)}`);
  if (p.exceptQueues?.length) where.push(`queue <> ALL(${param(p.exceptQueues)}::text[])`);
  if (p.exceptTasks?.length) where.push(`task <> ALL(${param(p.exceptTasks)}::text[])`);
  // One branch per state, each an ordered range of the index by (state, finished_at, id)
  // cut at $1 rows; the union is cut to the oldest $1. At most states × limit rows are read.
  const branches = states.map((_, i) => `SELECT * FROM (SELECT id, finished_at FROM :schema.jobs_finished
      WHERE state = ($2::text[])[${i + 1}] AND ${where.join(' AND ')}
      ORDER BY finished_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) b${i}`);
  const pick = `SELECT id FROM (${branches.join(' UNION ALL ')}) u ORDER BY finished_at, id LIMIT $1`;
  return deletePicked(ctx, 'delete_finished', pick, values);
}

export async function jobDeleteFinishedBeyond(ctx: PgContext, { queue, keep, limit }: StoreParams<'jobDeleteFinishedBeyond'>): Promise<number> {
  checkDeleteBatch('jobDeleteFinishedBeyond', { limit, keep });
  // The keep-th newest finished job of the queue is the boundary; everything older goes.
  // Fewer than `keep` finished jobs: the boundary is NULL and nothing matches.
  const older = keep === 0
    ? ''
    : `AND (finished_at, id) < (SELECT finished_at, id FROM :schema.jobs_finished WHERE queue = $1
         ORDER BY finished_at DESC, id DESC LIMIT 1 OFFSET $3)`;
  const pick = `SELECT id FROM :schema.jobs_finished WHERE queue = $1 ${older}
    ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`;
  return deletePicked(ctx, 'delete_finished_beyond', pick, keep === 0 ? [queue, limit] : [queue, limit, keep - 1]);
}
