import type { Operations } from '../driver-store.js';
import type { SqliteContext } from './context.js';

/**
 * How long one SQLite statement may wait *synchronously* for another process's
 * write lock (better-sqlite3's `timeout`, SQLite's busy handler), in ms. Kept short:
 * that wait blocks the event loop, so heartbeats, cancels and signals would freeze
 * behind it. Longer waits happen in {@link whenUnlocked}, between event-loop turns.
 */
export const SYNC_BUSY_TIMEOUT_MS = 5;

/** The longest pause between two asynchronous retries, in ms. */
const MAX_BACKOFF_MS = 50;

/**
 * True for SQLite's "database is locked" family (SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT,
 * SQLITE_BUSY_RECOVERY, …): another connection holds the lock; nothing was written.
 */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Runs `attempt` and, while it is refused with SQLITE_BUSY, runs it again after a
 * pause, without blocking the event loop: 1, 2, 4 … ms doubling up to 50 ms, each
 * with up to 50% random jitter (so two waiting processes do not retry in step),
 * until `budgetMs` has passed since the first try; then the last SQLITE_BUSY error
 * is thrown. Other errors are thrown at once.
 *
 * Retrying a whole operation is safe because each SQLite store operation is one
 * statement or one `BEGIN IMMEDIATE` transaction: SQLITE_BUSY means it wrote nothing
 * (the lock is taken at BEGIN, before any statement runs).
 *
 * @param budgetMs - how long the caller may wait for the lock in total, ms (≥ 0)
 */
export async function whenUnlocked<T>(attempt: () => Promise<T>, budgetMs: number): Promise<T> {
  const deadline = performance.now() + budgetMs;
  for (let delay = 1; ; delay = Math.min(delay * 2, MAX_BACKOFF_MS)) {
    try {
      return await attempt();
    } catch (error) {
      const pause = delay * (1 + Math.random() / 2);
      if (!isBusy(error) || performance.now() + pause > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * The SQLite driver's operations, each retried by {@link whenUnlocked} for up to the
 * context's `busyTimeoutMs`.
 */
export function retryWhileBusy(operations: Operations<SqliteContext>): Operations<SqliteContext> {
  const retrying: Record<string, unknown> = {};
  for (const [name, operation] of Object.entries(operations) as Array<[string, (context: SqliteContext, params: unknown) => Promise<unknown>]>) {
    retrying[name] = (context: SqliteContext, params: unknown) => whenUnlocked(async () => operation(context, params), context.busyTimeoutMs);
  }
  return retrying as Operations<SqliteContext>;
}
