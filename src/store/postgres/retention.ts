import { checkDeleteBatch } from '../delete-batch.js';
import type { StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';

/** Deleting finished jobs on PostgreSQL (retention, purges); see the Store interface for each contract. */

const FINISHED = "state IN ('completed', 'failed', 'cancelled')";

/**
 * Deletes the picked ids, re-checking `recheck` on each row at delete time (a row
 * retried meanwhile is left alone), and counts them. Picks lock their rows with
 * SKIP LOCKED: a row another transaction is changing is left for the next batch.
 */
async function deletePicked(ctx: PgContext, name: string, pick: string, recheck: string, values: unknown[]): Promise<number> {
  const rows = await ctx.query<{ count: number }>(name, `
    WITH picked AS (${pick}),
    deleted AS (DELETE FROM :schema.jobs j USING picked WHERE j.id = picked.id AND ${recheck} RETURNING 1)
    SELECT count(*)::int AS count FROM deleted`, values);
  return rows[0]!.count;
}

export async function jobDeleteFinished(ctx: PgContext, p: StoreParams<'jobDeleteFinished'>): Promise<number> {
  checkDeleteBatch('jobDeleteFinished', p);
  const states = [...new Set(p.states)];
  if (states.length === 0) return 0;
  const values: unknown[] = [p.limit, states];
  const param = (value: unknown) => `$${values.push(value)}`;
  const where = ['finished_at IS NOT NULL'];
  if (p.finishedBefore !== undefined) where.push(`finished_at < ${param(date(p.finishedBefore))}`);
  if (p.createdBefore !== undefined) where.push(`created_at < ${param(date(p.createdBefore))}`);
  if (p.queue !== undefined) where.push(`queue = ${param(p.queue)}`);
  if (p.task !== undefined) where.push(`task = ${param(p.task)}`);
  if (p.exceptQueues?.length) where.push(`queue <> ALL(${param(p.exceptQueues)}::text[])`);
  if (p.exceptTasks?.length) where.push(`task <> ALL(${param(p.exceptTasks)}::text[])`);
  // One branch per state, each an ordered range of the index by (state, finished_at, id)
  // cut at $1 rows; the union is cut to the oldest $1. At most states × limit rows are read.
  const branches = states.map((_, i) => `SELECT * FROM (SELECT id, finished_at FROM :schema.jobs
      WHERE state = ($2::text[])[${i + 1}] AND ${where.join(' AND ')}
      ORDER BY finished_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) b${i}`);
  const pick = `SELECT id FROM (${branches.join(' UNION ALL ')}) u ORDER BY finished_at, id LIMIT $1`;
  return deletePicked(ctx, 'delete_finished', pick, 'j.state = ANY($2::text[])', values);
}

export async function jobDeleteFinishedBeyond(ctx: PgContext, { queue, keep, limit }: StoreParams<'jobDeleteFinishedBeyond'>): Promise<number> {
  checkDeleteBatch('jobDeleteFinishedBeyond', { limit, keep });
  // The keep-th newest finished job of the queue is the boundary; everything older goes.
  // Fewer than `keep` finished jobs: the boundary is NULL and nothing matches.
  const older = keep === 0
    ? ''
    : `AND (finished_at, id) < (SELECT finished_at, id FROM :schema.jobs WHERE queue = $1 AND finished_at IS NOT NULL
         ORDER BY finished_at DESC, id DESC LIMIT 1 OFFSET $3)`;
  const pick = `SELECT id FROM :schema.jobs WHERE queue = $1 AND finished_at IS NOT NULL AND ${FINISHED} ${older}
    ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`;
  return deletePicked(ctx, 'delete_finished_beyond', pick, `j.${FINISHED}`, keep === 0 ? [queue, limit] : [queue, limit, keep - 1]);
}
