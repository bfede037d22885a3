import type Database from 'better-sqlite3';
import type { SqliteContext } from './context.js';

/**
 * `fn` in a `BEGIN IMMEDIATE` transaction, committed when it returns and rolled back
 * when it throws; called inside one, `fn` joins it. Not better-sqlite3's
 * `db.transaction(fn)`: that builds five wrapper functions per call and runs a nested
 * call in a SAVEPOINT, two extra statements that no operation here needs (none catches
 * an inner failure and goes on). With the hot path's SQL texts built once (jobs.ts),
 * a complete-and-claim cycle of 10 jobs took 3–7% less time (issue 14; in-process A/B,
 * 2,000 cycles each, three runs).
 * @throws what `fn` throws (after the rollback); SQLITE_BUSY from BEGIN IMMEDIATE while another connection holds the write lock (nothing written; busy.ts retries)
 */
export function flatTransaction<T>(db: Database.Database, sql: SqliteContext['sql'], fn: () => T): T {
  if (db.inTransaction) return fn();
  sql('BEGIN IMMEDIATE').run();
  try {
    const value = fn();
    sql('COMMIT').run();
    return value;
  } catch (error) {
    if (db.inTransaction) sql('ROLLBACK').run();
    throw error;
  }
}
