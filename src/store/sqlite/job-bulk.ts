import type { Job } from '../../job/types.js';
import type { CancelManyReport, JobBulkFilter, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { CANCEL_CHILDREN, CANCEL_REQUESTED, FRESH_STEPS, RETRIED } from './timeline.js';

/**
 * Deleting jobs and the batches of bulk retry, cancel and purge on SQLite; see the
 * Store interface for each contract. Each batch is one `BEGIN IMMEDIATE`
 * transaction (or one statement) over at most the ids given.
 */

/**
 * The WHERE clause of a filter, only the fields given (so SQLite can pick the index
 * that fits), and its parameters. One state is `state = @state`: then jobs_state
 * (state, id) serves an id-ordered page without sorting.
 */
function where(filter: JobBulkFilter): { text: string; params: Record<string, unknown> } {
  const parts = [filter.states.length === 1 ? 'state = @state' : 'state IN (SELECT value FROM json_each(@states))'];
  if (filter.queue !== undefined) parts.push('queue = @queue');
  if (filter.task !== undefined) parts.push('task = @task');
  if (filter.createdBefore !== undefined) parts.push('created_at < @createdBefore');
  if (filter.finishedBefore !== undefined) parts.push('finished_at < @finishedBefore');
  return {
    text: parts.join(' AND '),
    params: {
      state: filter.states[0] ?? null,
      states: JSON.stringify(filter.states),
      queue: filter.queue ?? null,
      task: filter.task ?? null,
      createdBefore: filter.createdBefore ?? null,
      finishedBefore: filter.finishedBefore ?? null,
    },
  };
}

export async function jobDelete(ctx: SqliteContext, { id }: StoreParams<'jobDelete'>): Promise<{ state: Job['state']; deleted: boolean } | null> {
  return ctx.transaction(() => {
    const row = ctx.sql('SELECT state FROM jobs WHERE id = ?').get(id) as { state: Job['state'] } | undefined;
    if (!row) return null;
    if (row.state === 'running') return { state: row.state, deleted: false };
    ctx.sql('DELETE FROM jobs WHERE id = ?').run(id);
    return { state: row.state, deleted: true };
  });
}

export async function jobCount(ctx: SqliteContext, filter: StoreParams<'jobCount'>): Promise<number> {
  const w = where(filter);
  return (ctx.sql(`SELECT count(*) AS n FROM jobs WHERE ${w.text}`).get(w.params) as { n: number }).n;
}

export async function jobSelectIds(ctx: SqliteContext, { afterId, limit, ...filter }: StoreParams<'jobSelectIds'>): Promise<number[]> {
  const w = where(filter);
  const rows = ctx.sql(`SELECT id FROM jobs WHERE ${w.text} AND id > @afterId ORDER BY id LIMIT @limit`).all({ ...w.params, afterId, limit }) as Array<{ id: number }>;
  return rows.map((r) => r.id);
}

export async function jobRetryMany(ctx: SqliteContext, { ids, now, fresh = false }: StoreParams<'jobRetryMany'>): Promise<number[]> {
  if (ids.length === 0) return [];
  const find = ctx.sql(`SELECT id, key FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND state IN ('failed','cancelled') ORDER BY id DESC`);
  const keyHeld = ctx.sql(`SELECT 1 FROM jobs WHERE key = ? AND state IN ('queued','running')`);
  const requeue = ctx.sql(`UPDATE jobs SET ${RETRIED} WHERE id = @id`);
  const clearSteps = ctx.sql(FRESH_STEPS);
  return ctx.transaction(() => {
    const retried: number[] = [];
    // One by one inside the transaction, newest first: a retried keyed job holds its key
    // for the older ones of the batch.
    for (const row of find.all(JSON.stringify(ids)) as Array<{ id: number; key: string | null }>) {
      if (row.key !== null && keyHeld.get(row.key)) continue;
      requeue.run({ id: row.id, now, fresh: fresh ? 1 : 0 });
      if (fresh) clearSteps.run({ id: row.id, fresh: 1 });
      retried.push(row.id);
    }
    return retried.reverse();
  });
}

export async function jobCancelMany(ctx: SqliteContext, { ids, reason, by = null, now }: StoreParams<'jobCancelMany'>): Promise<CancelManyReport> {
  if (ids.length === 0) return { cancelled: [], requested: [] };
  const params = { ids: JSON.stringify(ids), reason, by, now };
  const of = (rows: unknown[]) => (rows as Array<{ id: number }>).map((r) => r.id).sort((a, b) => a - b);
  return ctx.transaction(() => {
    const report = {
      cancelled: of(ctx.sql(`UPDATE jobs SET state = 'cancelled', cancel_requested_at = @now, cancel_reason = @reason, finished_at = @now,
        timeline = ${CANCEL_REQUESTED.queued} WHERE id IN (SELECT value FROM json_each(@ids)) AND state = 'queued' RETURNING id`).all(params)),
      requested: of(ctx.sql(`UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, @now), cancel_reason = coalesce(cancel_reason, @reason),
        timeline = ${CANCEL_REQUESTED.running} WHERE id IN (SELECT value FROM json_each(@ids)) AND state = 'running' RETURNING id`).all(params)),
    };
    const parents = [...report.cancelled, ...report.requested];
    if (parents.length > 0) for (const statement of CANCEL_CHILDREN) ctx.sql(statement).run({ parents: JSON.stringify(parents), now });
    return report;
  });
}
