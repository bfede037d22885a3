import { END_ATTEMPT, LEASE_EXPIRED_MESSAGE } from '../constants.js';
import type { CancelRequest, LeaseReport, RescueReport, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { withEvent } from './timeline.js';

/**
 * The leases of running jobs on SQLite: the worker's batched extension (with its
 * cancel report), the cheap cancel-request read, and the rescue of expired leases.
 */

const LEASES_JSON = `(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(@leases))`;

export async function leaseExtendMany(ctx: SqliteContext, { owner, leases, leaseMs, now }: StoreParams<'leaseExtendMany'>): Promise<LeaseReport> {
  if (leases.length === 0) return { lost: [], cancelRequested: [] };
  const rows = ctx.sql(`UPDATE jobs SET lease_expires_at = @expires
    WHERE state = 'running' AND lease_owner = @owner AND (id, lease_token) IN ${LEASES_JSON}
    RETURNING id, cancel_requested_at, cancel_reason`).all({
    owner,
    expires: now + leaseMs,
    leases: JSON.stringify(leases.map((l) => [l.id, l.token])),
  }) as Array<{ id: number; cancel_requested_at: number | null; cancel_reason: string | null }>;
  const held = new Set(rows.map((r) => r.id));
  return {
    lost: leases.filter((l) => !held.has(l.id)).map((l) => l.id),
    cancelRequested: rows.filter((r) => r.cancel_requested_at !== null).map((r) => ({ id: r.id, reason: r.cancel_reason })),
  };
}

export async function jobCancelRequests(ctx: SqliteContext, { ids }: StoreParams<'jobCancelRequests'>): Promise<CancelRequest[]> {
  if (ids.length === 0) return [];
  // The few requested rows (migration 9's partial index), not a lookup per id given.
  return ctx.sql(`SELECT id, cancel_reason AS reason FROM jobs INDEXED BY jobs_cancel_requested
    WHERE id IN (SELECT value FROM json_each(?)) AND state = 'running' AND cancel_requested_at IS NOT NULL`).all(JSON.stringify(ids)) as CancelRequest[];
}

export async function jobRescueExpired(ctx: SqliteContext, { now }: StoreParams<'jobRescueExpired'>): Promise<RescueReport> {
  // A read first: most passes find nothing and take no write lock.
  const any = ctx.sql(`SELECT 1 FROM jobs INDEXED BY jobs_lease WHERE state = 'running' AND lease_expires_at < ? LIMIT 1`).get(now);
  if (!any) return { requeued: [], failed: [], cancelled: [] };
  const expired = `state = 'running' AND lease_expires_at < @now`;
  const appendError = `errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'time', @now, 'message', @message, 'stack', NULL))`;
  const rescued = (outcome: string) => `timeline = ${withEvent(`'type', 'rescued', 'at', @now, 'outcome', '${outcome}'`)}, ${END_ATTEMPT}`;
  const ids = (sql: string) => (ctx.sql(sql).all({ now, message: LEASE_EXPIRED_MESSAGE }) as Array<{ id: number }>).map((r) => r.id);
  return ctx.transaction(() => ({
    cancelled: ids(`UPDATE jobs SET state = 'cancelled', finished_at = @now, ${rescued('cancelled')}
      WHERE ${expired} AND cancel_requested_at IS NOT NULL RETURNING id`),
    failed: ids(`UPDATE jobs SET state = 'failed', finished_at = @now, ${appendError}, ${rescued('failed')}
      WHERE ${expired} AND attempt >= max_attempts RETURNING id`),
    requeued: ids(`UPDATE jobs SET state = 'queued', ${appendError}, ${rescued('queued')}
      WHERE ${expired} RETURNING id`),
  }));
}
