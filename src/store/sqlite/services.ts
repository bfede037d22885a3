import type { ServiceRecord, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { rowToService, type ServiceRow } from './rows.js';

/** Services on SQLite: one row each, joined with the lease `service:<name>` that fences its runs. */

const WITH_LEASE = `LEFT JOIN leases l ON l.name = 'service:' || s.name`;

export async function serviceEnsure(ctx: SqliteContext, { name, now }: StoreParams<'serviceEnsure'>): Promise<ServiceRecord> {
  ctx.sql('INSERT INTO services (name, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING').run(name, now, now);
  return (await serviceGet(ctx, { name }))!;
}

export async function serviceGet(ctx: SqliteContext, { name }: StoreParams<'serviceGet'>): Promise<ServiceRecord | null> {
  const row = ctx.sql(`SELECT s.*, l.owner AS holder, l.expires_at AS holder_until FROM services s ${WITH_LEASE} WHERE s.name = ?`).get(name) as
    | ServiceRow
    | undefined;
  return row ? rowToService(row) : null;
}

export async function serviceList(ctx: SqliteContext, { now }: StoreParams<'serviceList'>): Promise<ServiceRecord[]> {
  const rows = ctx.sql(`SELECT s.*, CASE WHEN l.expires_at > @now THEN l.owner END AS holder,
      CASE WHEN l.expires_at > @now THEN l.expires_at END AS holder_until
    FROM services s ${WITH_LEASE} ORDER BY s.name`).all({ now }) as ServiceRow[];
  return rows.map(rowToService);
}

export async function serviceRecord(ctx: SqliteContext, p: StoreParams<'serviceRecord'>): Promise<boolean> {
  return ctx.sql(`UPDATE services SET
      last_run_at = CASE WHEN @error IS NULL THEN @lastRunAt ELSE last_run_at END,
      next_run_at = @nextRunAt,
      last_error = coalesce(@error, last_error),
      last_error_at = CASE WHEN @error IS NULL THEN last_error_at ELSE @now END,
      failures = CASE WHEN @error IS NULL THEN 0 ELSE failures + 1 END,
      updated_at = @now
    WHERE name = @name AND EXISTS (SELECT 1 FROM leases WHERE name = @leaseName AND token = @token AND owner IS NOT NULL)`).run(p).changes === 1;
}

export async function serviceSetPaused(ctx: SqliteContext, { name, paused, now }: StoreParams<'serviceSetPaused'>): Promise<boolean> {
  return ctx.sql('UPDATE services SET paused = ?, updated_at = ? WHERE name = ?').run(paused ? 1 : 0, now, name).changes === 1;
}

export async function serviceTrigger(ctx: SqliteContext, { name, now }: StoreParams<'serviceTrigger'>): Promise<boolean> {
  return ctx.sql('UPDATE services SET next_run_at = @now, updated_at = @now WHERE name = @name').run({ name, now }).changes === 1;
}
