import { END_ATTEMPT, LEASE_EXPIRED_MESSAGE } from '../constants.js';
import type { CancelRequest, LeaseReport, RescueReport, StoreParams } from '../store.js';
import { ASYNC_COMMIT, date, type PgContext } from './context.js';
import { ENDED_ATTEMPT, moveJobs } from './move.js';
import { ms, withEvent } from './timeline.js';

/**
 * The leases of running jobs on PostgreSQL: the worker's batched extension (with
 * its cancel report), the cheap cancel-request read, and the rescue of expired
 * leases, each one statement.
 */

export async function leaseExtendMany(ctx: PgContext, { owner, leases, leaseMs, now }: StoreParams<'leaseExtendMany'>): Promise<LeaseReport> {
  if (leases.length === 0) return { lost: [], cancelRequested: [] };
  const rows = await ctx.query<{ id: string; cancel_requested_at: Date | null; cancel_reason: string | null }>('extend', `
    WITH ${ASYNC_COMMIT}
    UPDATE :schema.jobs j SET lease_expires_at = $4
    FROM unnest($1::bigint[], $2::int[]) AS l(id, token), async_commit
    WHERE j.id = l.id AND j.lease_token = l.token AND j.state = 'running' AND j.lease_owner = $3
    RETURNING j.id, j.cancel_requested_at, j.cancel_reason`, [leases.map((l) => l.id), leases.map((l) => l.token), owner, date(now + leaseMs)]);
  const held = new Set(rows.map((r) => Number(r.id)));
  return {
    lost: leases.filter((l) => !held.has(l.id)).map((l) => l.id),
    cancelRequested: rows.filter((r) => r.cancel_requested_at !== null).map((r) => ({ id: Number(r.id), reason: r.cancel_reason })),
  };
}

export async function jobCancelRequests(ctx: PgContext, { ids }: StoreParams<'jobCancelRequests'>): Promise<CancelRequest[]> {
  if (ids.length === 0) return [];
  // A hash join of the ids with the few requested rows (migration 9's partial index):
  // `id = ANY($1)` was planned as a filter over every running row, ids × rows compares.
  const rows = await ctx.query<{ id: string; reason: string | null }>('cancel_requests', `
    SELECT j.id, j.cancel_reason AS reason FROM :schema.jobs j JOIN unnest($1::bigint[]) AS i(id) ON i.id = j.id
    WHERE j.state = 'running' AND j.cancel_requested_at IS NOT NULL`, [[...new Set(ids)]]);
  return rows.map((r) => ({ id: Number(r.id), reason: r.reason }));
}

export async function jobRescueExpired(ctx: PgContext, { now }: StoreParams<'jobRescueExpired'>): Promise<RescueReport> {
  // Each expired job's outcome is read from its locked (latest) version: requeued
  // in place (its run_at kept: its place in line), or moved to jobs_finished as cancelled (a cancel was requested) or
  // failed (its last attempt). A lease-expired attempt gets an error entry, as a failure does.
  const rescued = (outcome: string) => withEvent(`'type', 'rescued', 'at', ${ms('$1::timestamptz')}, 'outcome', ${outcome}`, { row: 'j.' });
  const lapse = "j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'time', $2::bigint, 'message', $3::text, 'stack', NULL))";
  const rows = await ctx.query<{ id: string; state: string }>('rescue', `
    WITH expired AS (
      SELECT id, CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN attempt >= max_attempts THEN 'failed' ELSE 'queued' END AS outcome
      FROM :schema.jobs WHERE state = 'running' AND lease_expires_at < $1::timestamptz FOR UPDATE SKIP LOCKED
    ), requeued AS (
      UPDATE :schema.jobs j SET state = 'queued', errors = ${lapse}, timeline = ${rescued("'queued'")}, ${END_ATTEMPT}
      FROM expired WHERE j.id = expired.id AND expired.outcome = 'queued'
      RETURNING j.id, j.state
    ), ${moveJobs({
      name: 'ended',
      from: 'jobs',
      using: 'expired',
      where: "j.id = expired.id AND expired.outcome <> 'queued'",
      set: {
        state: 'expired.outcome',
        finished_at: '$1',
        errors: `CASE WHEN expired.outcome = 'failed' THEN ${lapse} ELSE j.errors END`,
        timeline: rescued('expired.outcome'),
        ...ENDED_ATTEMPT,
      },
      returning: 'id, state',
    })}
    SELECT id, state FROM requeued UNION ALL SELECT id, state FROM ended`, [date(now), now, LEASE_EXPIRED_MESSAGE]);
  const of = (state: string) => rows.filter((r) => r.state === state).map((r) => Number(r.id));
  return { requeued: of('queued'), failed: of('failed'), cancelled: of('cancelled') };
}
