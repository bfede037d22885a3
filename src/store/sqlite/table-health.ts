import type { JobTableStats } from '../store.js';
import type { SqliteContext } from './context.js';

/**
 * The jobs table's health on SQLite; see the Store interface for each contract.
 * Both parts of the jobs (live and finished) are the one `jobs` table. SQLite updates and deletes rows in place, so there are never dead rows to clean,
 * and the only cleaning is handing free pages back to the file system.
 */

export async function jobTableStats(): Promise<JobTableStats> {
  return { liveRows: null, deadRows: 0, autovacuum: true };
}

export async function jobTableVacuum(ctx: SqliteContext): Promise<void> {
  // No argument: every free page. A file created without incremental auto-vacuum
  // (not by Baton) ignores it, and SQLite reuses its free pages instead.
  ctx.db.pragma('incremental_vacuum');
}
