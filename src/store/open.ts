import { ConfigError } from '../errors.js';
import { importPeer } from '../import-peer.js';
import type { Store } from './store.js';

/** The database URL used when none is given: `BATON_DATABASE_URL`, else `sqlite:./baton.db`. */
export function defaultDatabaseUrl(): string {
  return process.env.BATON_DATABASE_URL || 'sqlite:./baton.db';
}

/**
 * Opens the driver a database URL names (not yet migrated).
 * - `sqlite:PATH` or `sqlite://PATH` (relative to the working directory), `sqlite::memory:`
 * - `postgres://user@host:port/db` or `postgresql://…`; `?schema=NAME` picks the
 *   schema (@defaultValue 'baton'), other parameters go to node-postgres
 *
 * Each driver module is imported on first use, so the application installs only
 * the database package it uses (optional peer dependencies).
 *
 * @param options.onError - receives connection errors a driver survives (Postgres idle/LISTEN connections)
 * @param options.readOnly - open for reading only (the opener then calls
 *   `schemaCheck`, not `migrate`): SQLite opens the file read-only (it must exist;
 *   see SqliteStoreOptions.readOnly); PostgreSQL's connections refuse writes
 *   (default_transaction_read_only), and a role with SELECT only is enough.
 * @throws ConfigError for an unknown or malformed URL, or when the driver's package
 *   (better-sqlite3, pg) is not installed; the driver's error when the file cannot be opened
 */
export async function openStore(url: string, options: { onError?: (error: unknown, where: string) => void; readOnly?: boolean } = {}): Promise<Store> {
  const { onError, readOnly = false } = options;
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/.exec(url);
  if (sqlite) {
    const { SqliteStore } = await importPeer('better-sqlite3', () => import('./sqlite/store.js'));
    return new SqliteStore(sqlite[1]!, { readOnly });
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`database URL ${JSON.stringify(redact(url))} is malformed`);
    }
    const schema = parsed.searchParams.get('schema') ?? undefined;
    if (parsed.searchParams.getAll('schema').length > 1) throw new ConfigError(`database URL ${JSON.stringify(redact(url))}: ?schema= is given more than once; name one schema`);
    if (schema === '') throw new ConfigError(`database URL ${JSON.stringify(redact(url))}: ?schema= is empty; name a schema or leave the parameter out (default "baton")`);
    parsed.searchParams.delete('schema');
    const { PostgresStore } = await importPeer('pg', () => import('./postgres/store.js'));
    return new PostgresStore(parsed.toString(), { ...(schema ? { schema } : {}), ...(onError ? { onError } : {}), ...(readOnly ? { readOnly } : {}) });
  }
  throw new ConfigError(`database URL ${JSON.stringify(redact(url))} is not supported: use sqlite:PATH or postgres://…`);
}

/** Hides a password in a URL for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
