import { ConflictError } from '../../errors.js';
import type { LeaseAcquireResult, LeaseRecord, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';

/** Named leases on PostgreSQL (locks, services): acquire, renew, release, read; each fenced by its token. */

export async function leaseAcquire(ctx: PgContext, { name, owner, ttlMs, now }: StoreParams<'leaseAcquire'>): Promise<LeaseAcquireResult> {
  // The upsert takes the row lock, so two acquirers serialize; the loser's WHERE sees
  // the winner's live lease. A holder that releases between our upsert and our read
  // makes us try again.
  for (let round = 0; ; round++) {
    const rows = await ctx.query<{ token: string; expires_at: Date }>('lease_acquire', `
      INSERT INTO :schema.leases AS l (name, owner, token, expires_at) VALUES ($1, $2, 1, $3)
      ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at
        WHERE l.owner IS NULL OR l.expires_at <= $4
      RETURNING token, expires_at`, [name, owner, date(now + ttlMs), date(now)]);
    if (rows[0]) return { acquired: true, token: Number(rows[0].token), expiresAt: rows[0].expires_at.getTime() };
    const held = (await ctx.query<{ owner: string | null; expires_at: Date | null }>('lease_holder', 'SELECT owner, expires_at FROM :schema.leases WHERE name = $1', [name]))[0];
    if (held?.owner && held.expires_at && held.expires_at.getTime() > now) return { acquired: false, owner: held.owner, expiresAt: held.expires_at.getTime() };
    if (round === 5) throw new ConflictError(`lease "${name}" changed hands 5 times during one acquire`);
  }
}

export async function leaseRenew(ctx: PgContext, { name, owner, token, ttlMs, now }: StoreParams<'leaseRenew'>): Promise<boolean> {
  const sql = 'UPDATE :schema.leases SET expires_at = $4 WHERE name = $1 AND owner = $2 AND token = $3 RETURNING 1';
  return (await ctx.query('lease_renew', sql, [name, owner, token, date(now + ttlMs)])).length === 1;
}

export async function leaseRelease(ctx: PgContext, { name, owner, token }: StoreParams<'leaseRelease'>): Promise<boolean> {
  const sql = 'UPDATE :schema.leases SET owner = NULL, expires_at = NULL WHERE name = $1 AND owner = $2 AND token = $3 RETURNING 1';
  return (await ctx.query('lease_release', sql, [name, owner, token])).length === 1;
}

export async function leaseGet(ctx: PgContext, { name }: StoreParams<'leaseGet'>): Promise<LeaseRecord | null> {
  const row = (await ctx.query<{ name: string; owner: string | null; token: string; expires_at: Date | null }>('lease_get', 'SELECT * FROM :schema.leases WHERE name = $1', [name]))[0];
  return row ? { name: row.name, owner: row.owner, token: Number(row.token), expiresAt: row.expires_at?.getTime() ?? null } : null;
}
