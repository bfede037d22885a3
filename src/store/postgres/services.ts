import type { ServiceRecord, StoreParams } from '../store.js';
import { date, dateOrNull, type PgContext } from './context.js';
import { rowToService, type ServiceRow } from './rows.js';

/** Services on PostgreSQL: one row each, joined with the lease `service:<name>` that fences its runs. */

const WITH_LEASE = `LEFT JOIN :schema.leases l ON l.name = 'service:' || s.name`;

export async function serviceEnsure(ctx: PgContext, { name, now }: StoreParams<'serviceEnsure'>): Promise<ServiceRecord> {
  await ctx.query('service_ensure', 'INSERT INTO :schema.services (name, created_at, updated_at) VALUES ($1, $2, $2) ON CONFLICT (name) DO NOTHING', [name, date(now)]);
  return (await serviceGet(ctx, { name }))!;
}

export async function serviceGet(ctx: PgContext, { name }: StoreParams<'serviceGet'>): Promise<ServiceRecord | null> {
  const sql = `SELECT s.*, l.owner AS holder, l.expires_at AS holder_until FROM :schema.services s ${WITH_LEASE} WHERE s.name = $1`;
  const row = (await ctx.query<ServiceRow>('service_get', sql, [name]))[0];
  return row ? rowToService(row) : null;
}

export async function serviceList(ctx: PgContext, { now }: StoreParams<'serviceList'>): Promise<ServiceRecord[]> {
  const rows = await ctx.query<ServiceRow>('service_list', `SELECT s.*, CASE WHEN l.expires_at > $1 THEN l.owner END AS holder,
      CASE WHEN l.expires_at > $1 THEN l.expires_at END AS holder_until
    FROM :schema.services s ${WITH_LEASE} ORDER BY s.name`, [date(now)]);
  return rows.map(rowToService);
}

export async function serviceRecord(ctx: PgContext, p: StoreParams<'serviceRecord'>): Promise<boolean> {
  const rows = await ctx.query('service_record', `UPDATE :schema.services SET
      last_run_at = CASE WHEN $5::text IS NULL THEN $3::timestamptz ELSE last_run_at END,
      next_run_at = $4,
      last_error = coalesce($5::text, last_error),
      last_error_at = CASE WHEN $5::text IS NULL THEN last_error_at ELSE $6 END,
      failures = CASE WHEN $5::text IS NULL THEN 0 ELSE failures + 1 END,
      updated_at = $6
    WHERE name = $1 AND EXISTS (SELECT 1 FROM :schema.leases WHERE name = $2 AND token = $7 AND owner IS NOT NULL FOR SHARE)
    RETURNING 1`, [p.name, p.leaseName, date(p.lastRunAt), dateOrNull(p.nextRunAt), p.error, date(p.now), p.token]);
  return rows.length === 1;
}

export async function serviceSetPaused(ctx: PgContext, { name, paused, now }: StoreParams<'serviceSetPaused'>): Promise<boolean> {
  const sql = 'UPDATE :schema.services SET paused = $2, updated_at = $3 WHERE name = $1 RETURNING 1';
  return (await ctx.query('service_pause', sql, [name, paused, date(now)])).length === 1;
}

export async function serviceTrigger(ctx: PgContext, { name, now }: StoreParams<'serviceTrigger'>): Promise<boolean> {
  const sql = 'UPDATE :schema.services SET next_run_at = $2, updated_at = $2 WHERE name = $1 RETURNING 1';
  return (await ctx.query('service_trigger', sql, [name, date(now)])).length === 1;
}
