import type Database from 'better-sqlite3';

/**
 * What the SQLite operations (jobs.ts, leases.ts, …) work with: the store's one
 * connection, its statement cache and its write transaction.
 */
export interface SqliteContext {
  readonly db: Database.Database;
  /** The prepared statement of `text`, prepared once per connection. */
  sql(text: string): Database.Statement;
  /**
   * Runs `fn` in a `BEGIN IMMEDIATE` transaction (the write lock taken up front,
   * waiting up to the busy timeout): committed when it returns, rolled back when it throws.
   */
  transaction<T>(fn: () => T): T;
}
