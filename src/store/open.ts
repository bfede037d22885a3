import { ConfigError } from '../errors.js';
import { importPeer } from '../import-peer.js';
import { parseDirectUrl, parsePostgresUrl } from './postgres/url.js';
import type { LockWait } from './sqlite/busy.js';
import type { Store } from './store.js';

/** The database URL used when none is given: `BATON_DATABASE_URL`, else `sqlite:./baton.db`. */
export function defaultDatabaseUrl(): string {
  return process.env.BATON_DATABASE_URL || 'sqlite:./baton.db';
}

/**
 * Opens the driver a database URL names (not yet migrated).
 * - `sqlite:PATH` or `sqlite://PATH` (relative to the working directory), `sqlite::memory:`
 * - `postgres://user@host:port/db` or `postgresql://…`; `?schema=NAME` picks the
 *   schema (@defaultValue 'baton'), `?pool_size=N` the pool's connections,
 *   also the claims a worker keeps in flight at once (@defaultValue 4), `?pgbouncer=true` declares a PgBouncer in transaction
 *   pooling mode (needs `directUrl`); other parameters go to node-postgres
 *
 * Each driver module is imported on first use, so the application installs only
 * the database package it uses (optional peer dependencies).
 *
 * @param options.onError - receives connection errors a driver survives (Postgres idle/LISTEN connections)
 * @param options.onLockWait - SQLite only: told of each long wait for another process's
 *   write lock and of its end (SqliteStoreOptions.onLockWait)
 * @param options.readOnly - open for reading only (the opener then calls
 *   `schemaCheck`, not `migrate`): SQLite opens the file read-only (it must exist;
 *   see SqliteStoreOptions.readOnly); PostgreSQL's connections refuse writes
 *   (default_transaction_read_only), and a role with SELECT only is enough.
 * @param options.directUrl - PostgreSQL only: a URL straight to the server for
 *   LISTEN and migrations (see PostgresStoreOptions.directUrl)
 * @throws ConfigError for an unknown or malformed URL, or when the driver's package
 *   (better-sqlite3, pg) is not installed; the driver's error when the file cannot be opened
 */
export async function openStore(
  url: string,
  options: { onError?: (error: unknown, where: string) => void; onLockWait?: (wait: LockWait) => void; readOnly?: boolean; directUrl?: string | undefined } = {},
): Promise<Store> {
  const { onError, onLockWait, readOnly = false, directUrl } = options;
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/.exec(url);
  if (sqlite) {
    if (directUrl !== undefined) throw new ConfigError(`a direct database URL (directDatabase, BATON_DIRECT_DATABASE_URL) applies to PostgreSQL only, not to ${JSON.stringify(redact(url))}`);
    const { SqliteStore } = await importPeer('better-sqlite3', () => import('./sqlite/store.js'));
    return new SqliteStore(sqlite[1]!, { readOnly, ...(onLockWait ? { onLockWait } : {}) });
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { connectionString, ...settings } = parsePostgresUrl(url, redact(url));
    const direct = directUrl === undefined ? {} : { directUrl: parseDirectUrl(directUrl, redact(directUrl)) };
    const { PostgresStore } = await importPeer('pg', () => import('./postgres/store.js'));
    return new PostgresStore(connectionString, { ...settings, ...direct, ...(onError ? { onError } : {}), ...(readOnly ? { readOnly } : {}) });
  }
  throw new ConfigError(`database URL ${JSON.stringify(redact(url))} is not supported: use sqlite:PATH or postgres://…`);
}

/** Hides a password in a URL for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
