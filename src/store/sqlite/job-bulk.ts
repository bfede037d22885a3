import type { Job } from '../../job/types.js';
import type { CancelManyReport, JobBulkFilter, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { jobTable, moveBack } from './move.js';
import { CANCEL_CHILDREN, CANCEL_REQUESTED } from './timeline.js';

/**
 * Deleting jobs and the batches of bulk retry, cancel and purge on SQLite; see the
 * Store interface for each contract. Each batch is one `BEGIN IMMEDIATE`
 * transaction (or one statement) over at most the ids given.
 */

/**
 * The WHERE clause of a filter, only the fields given (so SQLite can pick the index
 * that fits), the table it reads (jobTable: only `jobs` or `jobs_finished` when the
 * states are in one), and its parameters. One finished state is `state = @state`: then
 * jobs_finished_list (state, id) serves an id-ordered page without sorting.
 */
function where(filter: JobBulkFilter): { table: string; text: string; params: Record<string, unknown> } {
  const parts = [filter.states.length === 1 ? 'state = @state' : 'state IN (SELECT value FROM json_each(@states))'];
  if (filter.queue !== undefined) parts.push('queue = @queue');
  if (filter.task !== undefined) parts.push('task = @task');
  if (filter.createdBefore !== undefined) parts.push('created_at < @createdBefore');
  if (filter.finishedBefore !== undefined) parts.push('finished_at < @finishedBefore');
  return {
    table: jobTable(filter.states),
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
    const row = ctx.sql('SELECT state FROM jobs_all WHERE id = ?').get(id) as { state: Job['state'] } | undefined;
    if (!row) return null;
    if (row.state === 'running') return { state: row.state, deleted: false };
    ctx.sql(`DELETE FROM ${jobTable([row.state])} WHERE id = ?`).run(id);
    // A finished job's steps and messages go with it by trigger (job_steps_deleted); a
    // live one's here: no trigger on a delete from jobs, which every move does.
    if (row.state === 'queued') for (const table of ['job_steps', 'job_messages']) ctx.sql(`DELETE FROM ${table} WHERE job_id = ?`).run(id);
    return { state: row.state, deleted: true };
  });
}

export async function jobCount(ctx: SqliteContext, filter: StoreParams<'jobCount'>): Promise<number> {
  const w = where(filter);
  return (ctx.sql(`SELECT count(*) AS n FROM ${w.table} WHERE ${w.text}`).get(w.params) as { n: number }).n;
}

export async function jobSelectIds(ctx: SqliteContext, { afterId, limit, ...filter }: StoreParams<'jobSelectIds'>): Promise<number[]> {
  const w = where(filter);
  const rows = ctx.sql(`SELECT id FROM ${w.table} WHERE ${w.text} AND id > @afterId ORDER BY id LIMIT @limit`).all({ ...w.params, afterId, limit }) as Array<{ id: number }>;
  return rows.map((r) => r.id);
}

export async function jobRetryMany(ctx: SqliteContext, { ids, now, fresh = false }: StoreParams<'jobRetryMany'>): Promise<number[]> {
  if (ids.length === 0) return [];
  const find = ctx.sql(`SELECT id, key FROM jobs_finished WHERE id IN (SELECT value FROM json_each(?)) AND state IN ('failed','cancelled') ORDER BY id DESC`);
  const keyHeld = ctx.sql(`SELECT 1 FROM jobs WHERE key = ? AND state IN ('queued','running')`);
  return ctx.transaction(() => {
    const retried: number[] = [];
    // One by one inside the transaction, newest first: a retried keyed job holds its key
    // for the older ones of the batch.
    for (const row of find.all(JSON.stringify(ids)) as Array<{ id: number; key: string | null }>) {
      if (row.key !== null && keyHeld.get(row.key)) continue;
      moveBack(ctx, row.id, now, fresh);
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
