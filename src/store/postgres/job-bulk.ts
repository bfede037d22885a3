import type { Job } from '../../job/types.js';
import type { CancelManyReport, JobBulkFilter, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';
import { FRESH_STEPS, moveJobs, RETRIED } from './move.js';
import { cancelChildren } from './cancel-children.js';
import { cancelRequested } from './timeline.js';

/**
 * Deleting jobs and the batches of bulk retry, cancel and purge on PostgreSQL; see
 * the Store interface for each contract. Each batch is one statement or one short
 * transaction over at most the ids given; rows are locked by id, never the table.
 */

/** The conditions of a filter on `$1`..`$5` (states, queue, task, createdBefore, finishedBefore) and their values. */
const FILTER = `state = ANY($1::text[]) AND ($2::text IS NULL OR queue = $2) AND ($3::text IS NULL OR task = $3)
  AND ($4::timestamptz IS NULL OR created_at < $4) AND ($5::timestamptz IS NULL OR finished_at < $5)`;
const filterValues = (f: JobBulkFilter) => [
  f.states,
  f.queue ?? null,
  f.task ?? null,
  f.createdBefore === undefined ? null : date(f.createdBefore),
  f.finishedBefore === undefined ? null : date(f.finishedBefore),
];

/**
 * CTEs deleting the steps and messages (migration 22) of the job jobDelete deletes (`d`, `f`).
 * A job whose DELETE found it running keeps them.
 */
const DELETE_WORKFLOW_ROWS = `steps_deleted AS (
      DELETE FROM :schema.job_steps WHERE job_id = $1 AND EXISTS (SELECT 1 FROM d UNION ALL SELECT 1 FROM f)
    ), messages_deleted AS (
      DELETE FROM :schema.job_messages WHERE job_id = $1 AND EXISTS (SELECT 1 FROM d UNION ALL SELECT 1 FROM f)
    )`;

export async function jobDelete(ctx: PgContext, { id }: StoreParams<'jobDelete'>): Promise<{ state: Job['state']; deleted: boolean } | null> {
  // The DELETE re-checks the state of a row claimed meanwhile (it waits for the
  // claim's lock, then sees 'running'); the SELECT answers for a row it left alone.
  // A job is in one of the two tables (migration 10); a finished one is never running.
  const rows = await ctx.query<{ state: Job['state']; deleted: boolean }>(null, `
    WITH d AS (
      DELETE FROM :schema.jobs WHERE id = $1 AND state <> 'running' RETURNING state
    ), f AS (
      DELETE FROM :schema.jobs_finished WHERE id = $1 RETURNING state
    ), ${DELETE_WORKFLOW_ROWS}
    SELECT state, true AS deleted FROM d
    UNION ALL
    SELECT state, true FROM f
    UNION ALL
    SELECT state, false FROM :schema.jobs WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM d)`, [id]);
  return rows[0] ?? null;
}

export async function jobCount(ctx: PgContext, filter: StoreParams<'jobCount'>): Promise<number> {
  const rows = await ctx.query<{ n: string }>(null, `SELECT count(*) AS n FROM :schema.jobs_all WHERE ${FILTER}`, filterValues(filter));
  return Number(rows[0]!.n);
}

export async function jobSelectIds(ctx: PgContext, { afterId, limit, ...filter }: StoreParams<'jobSelectIds'>): Promise<number[]> {
  const rows = await ctx.query<{ id: string }>(null, `SELECT id FROM :schema.jobs_all WHERE ${FILTER} AND id > $6 ORDER BY id LIMIT $7`, [
    ...filterValues(filter),
    afterId,
    limit,
  ]);
  return rows.map((r) => Number(r.id));
}

export async function jobRetryMany(ctx: PgContext, { ids, now, fresh = false }: StoreParams<'jobRetryMany'>): Promise<number[]> {
  if (ids.length === 0) return [];
  // Keyed jobs: only the newest of the batch per key, and only when no queued or
  // running job holds the key (the unique index jobs_key would refuse the batch).
  const rows = await ctx.query<{ id: string }>(null, `
    WITH batch AS (
      SELECT id, key FROM :schema.jobs_finished WHERE id = ANY($1::bigint[]) AND state IN ('failed','cancelled') ORDER BY id FOR UPDATE
    ), eligible AS (
      SELECT id FROM batch WHERE key IS NULL
      UNION ALL
      SELECT max(id) FROM batch b WHERE key IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM :schema.jobs l WHERE l.key = b.key)
      GROUP BY key
    ), ${moveJobs({
      name: 'retried',
      from: 'jobs_finished',
      where: 'j.id = ANY(ARRAY(SELECT id FROM eligible))', // primary-key lookups, never a scan of the table
      set: RETRIED,
      returning: 'id',
    })}, ${FRESH_STEPS}
    SELECT id FROM retried`, [ids, date(now), fresh]);
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

/** The `cancelRequested` event of a bulk cancel: `$2` now, `$3` reason, `$4` who asked. */
const CANCEL_EVENT = cancelRequested('j.', '$2::timestamptz', '$4::text', '$3::text');

export async function jobCancelMany(ctx: PgContext, { ids, reason, by = null, now }: StoreParams<'jobCancelMany'>): Promise<CancelManyReport> {
  if (ids.length === 0) return { cancelled: [], requested: [] };
  const of = (rows: Array<{ id: string }>) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);
  return ctx.transaction(async (client) => {
    // Queued first, then running, each statement with its own snapshot: a job
    // claimed between the two is still found running by the second.
    const cancelled = await client.query<{ id: string }>(ctx.sql(`WITH ${moveJobs({
      name: 'cancelled',
      from: 'jobs',
      where: "j.id = ANY($1::bigint[]) AND j.state = 'queued'",
      set: { state: "'cancelled'", cancel_requested_at: '$2', cancel_reason: '$3', finished_at: '$2', timeline: CANCEL_EVENT.queued },
      returning: 'id',
    })} SELECT id FROM cancelled`), [ids, date(now), reason, by]);
    // Each row's trigger NOTIFYs <schema>_cancel at commit, as a single cancel does.
    const requested = await client.query<{ id: string }>(ctx.sql(`UPDATE :schema.jobs j SET cancel_requested_at = coalesce(cancel_requested_at, $2),
        cancel_reason = coalesce(cancel_reason, $3), timeline = ${CANCEL_EVENT.running} WHERE id = ANY($1::bigint[]) AND state = 'running' RETURNING id`), [ids, date(now), reason, by]);
    const parents = [...cancelled.rows, ...requested.rows].map((r) => r.id);
    if (parents.length > 0) await client.query(ctx.sql(`WITH ${cancelChildren('(SELECT unnest($1::bigint[]))')} SELECT 1`), [parents, date(now)]);
    return { cancelled: of(cancelled.rows), requested: of(requested.rows) };
  });
}
