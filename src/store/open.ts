import { ConfigError } from '../errors.js';
import type { Store } from './store.js';
import { SqliteStore } from './sqlite/store.js';

/** The database URL used when none is given: `BATON_DATABASE_URL`, else `sqlite:./baton.db`. */
export function defaultDatabaseUrl(): string {
  return process.env.BATON_DATABASE_URL || 'sqlite:./baton.db';
}

/**
 * Opens the driver a database URL names (not yet migrated).
 * - `sqlite:PATH` or `sqlite://PATH` (relative to the working directory), `sqlite::memory:`
 * @throws ConfigError for an unknown or malformed URL
 */
export function openStore(url: string): Store {
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/.exec(url);
  if (sqlite) return new SqliteStore(sqlite[1]!);
  if (/^postgres(ql)?:\/\//.test(url)) {
    throw new ConfigError(`database URL ${JSON.stringify(redact(url))}: the PostgreSQL driver is not available in this version`);
  }
  throw new ConfigError(`database URL ${JSON.stringify(redact(url))} is not supported: use sqlite:PATH`);
}

/** Hides a password in a URL for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
