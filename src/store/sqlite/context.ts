import type Database from 'better-sqlite3';
import type { LockWait } from './busy.js';

/**
 * What the SQLite operations (jobs.ts, leases.ts, …) work with: the store's one
 * connection, its statement cache and its write transaction.
 */
export interface SqliteContext {
  readonly db: Database.Database;
  /** How long an operation may wait for another process's write lock in total, ms (see busy.ts). */
  readonly busyTimeoutMs: number;
  /** Told of each wait for the write lock past LOCK_WAIT_REPORT_MS, and of its end (busy.ts). */
  readonly onLockWait?: ((wait: LockWait) => void) | undefined;
  /** The prepared statement of `text`, prepared once per connection. */
  sql(text: string): Database.Statement;
  /**
   * Runs `fn` in a `BEGIN IMMEDIATE` transaction (the write lock taken up front,
   * failing at once with SQLITE_BUSY while another process holds it: busy.ts retries): committed when it returns, rolled back when it throws.
   * Called inside a transaction, `fn` joins it (no savepoint): a throw rolls back the whole outer transaction.
   */
  transaction<T>(fn: () => T): T;
}
