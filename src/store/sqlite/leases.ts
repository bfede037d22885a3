import type { LeaseAcquireResult, LeaseRecord, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';

/** Named leases on SQLite (locks, services): acquire, renew, release, read; each fenced by its token. */

export async function leaseAcquire(ctx: SqliteContext, { name, owner, ttlMs, now }: StoreParams<'leaseAcquire'>): Promise<LeaseAcquireResult> {
  return ctx.transaction((): LeaseAcquireResult => {
    const row = ctx.sql(`INSERT INTO leases (name, owner, token, expires_at) VALUES (@name, @owner, 1, @expires)
      ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = leases.token + 1, expires_at = excluded.expires_at
        WHERE leases.owner IS NULL OR leases.expires_at <= @now
      RETURNING token, expires_at`).get({ name, owner, expires: now + ttlMs, now }) as { token: number; expires_at: number } | undefined;
    if (row) return { acquired: true, token: row.token, expiresAt: row.expires_at };
    // In the same write transaction: the holder cannot change between the two statements.
    const held = ctx.sql('SELECT owner, expires_at FROM leases WHERE name = ?').get(name) as { owner: string; expires_at: number };
    return { acquired: false, owner: held.owner, expiresAt: held.expires_at };
  });
}

export async function leaseRenew(ctx: SqliteContext, { name, owner, token, ttlMs, now }: StoreParams<'leaseRenew'>): Promise<boolean> {
  const expires = now + ttlMs;
  return ctx.sql('UPDATE leases SET expires_at = @expires WHERE name = @name AND owner = @owner AND token = @token').run({ name, owner, token, expires }).changes === 1;
}

export async function leaseRelease(ctx: SqliteContext, { name, owner, token }: StoreParams<'leaseRelease'>): Promise<boolean> {
  const sql = 'UPDATE leases SET owner = NULL, expires_at = NULL WHERE name = @name AND owner = @owner AND token = @token';
  return ctx.sql(sql).run({ name, owner, token }).changes === 1;
}

export async function leaseGet(ctx: SqliteContext, { name }: StoreParams<'leaseGet'>): Promise<LeaseRecord | null> {
  const row = ctx.sql('SELECT name, owner, token, expires_at FROM leases WHERE name = ?').get(name) as
    | { name: string; owner: string | null; token: number; expires_at: number | null }
    | undefined;
  return row ? { name: row.name, owner: row.owner, token: row.token, expiresAt: row.expires_at } : null;
}
