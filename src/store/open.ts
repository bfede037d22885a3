import { ConfigError } from '../errors.js';
import type { Store } from './store.js';
import { SqliteStore } from './sqlite/store.js';
import { PostgresStore } from './postgres/store.js';

/** The database URL used when none is given: `BATON_DATABASE_URL`, else `sqlite:./baton.db`. */
export function defaultDatabaseUrl(): string {
  return process.env.BATON_DATABASE_URL || 'sqlite:./baton.db';
}

/**
 * Opens the driver a database URL names (not yet migrated).
 * - `sqlite:PATH` or `sqlite://PATH` (relative to the working directory), `sqlite::memory:`
 * - `postgres://user@host:port/db` or `postgresql://…`; `?schema=NAME` picks the
 *   schema (@defaultValue 'baton'), other parameters go to node-postgres
 * @param onError - receives connection errors a driver survives (Postgres idle/LISTEN connections)
 * @throws ConfigError for an unknown or malformed URL
 */
export function openStore(url: string, onError?: (error: unknown, where: string) => void): Store {
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/.exec(url);
  if (sqlite) return new SqliteStore(sqlite[1]!);
  if (/^postgres(ql)?:\/\//.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`database URL ${JSON.stringify(redact(url))} is malformed`);
    }
    const schema = parsed.searchParams.get('schema') ?? undefined;
    if (schema === '') throw new ConfigError(`database URL ${JSON.stringify(redact(url))}: ?schema= is empty; name a schema or leave the parameter out (default "baton")`);
    parsed.searchParams.delete('schema');
    return new PostgresStore(parsed.toString(), { ...(schema ? { schema } : {}), ...(onError ? { onError } : {}) });
  }
  throw new ConfigError(`database URL ${JSON.stringify(redact(url))} is not supported: use sqlite:PATH or postgres://…`);
}

/** Hides a password in a URL for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
