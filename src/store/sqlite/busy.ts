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
 * How long an operation waits for the write lock before the wait is reported
 * ({@link LockWait} `phase: 'long'`), ms. Longer than any wait this process's own
 * writers cause one another (a transaction takes milliseconds), so a report means
 * another process holds the lock: a VACUUM, a backup, a stuck script.
 */
export const LOCK_WAIT_REPORT_MS = 1000;

/**
 * A wait for the write lock that passed {@link LOCK_WAIT_REPORT_MS} (`long`, reported
 * once), and its end (`ended`, reported only after a `long`): `op` is the store
 * operation waiting, `waitedMs` how long it has waited so far (ms), `outcome` how it
 * ended: the lock taken, the wait's budget spent (`gave-up`), or another error.
 */
export interface LockWait {
  op: string;
  phase: 'long' | 'ended';
  waitedMs: number;
  outcome?: 'acquired' | 'gave-up' | 'failed';
}

/**
 * Runs `attempt` and, while it is refused with SQLITE_BUSY, runs it again after a
 * pause, without blocking the event loop: 1, 2, 4 … ms doubling up to 50 ms, each
 * with up to 50% random jitter (so two waiting processes do not retry in step),
 * until `budgetMs` has passed since the first try; then the last SQLITE_BUSY error
 * is thrown. Other errors are thrown at once. A wait past {@link LOCK_WAIT_REPORT_MS}
 * is reported to `report` as `op`, once when it passes that and once when it ends.
 *
 * Retrying a whole operation is safe because each SQLite store operation is one
 * statement or one `BEGIN IMMEDIATE` transaction: SQLITE_BUSY means it wrote nothing
 * (the lock is taken at BEGIN, before any statement runs).
 *
 * @param budgetMs - how long the caller may wait for the lock in total, ms (≥ 0)
 */
export async function whenUnlocked<T>(attempt: () => Promise<T>, budgetMs: number, report?: { op: string; to: (wait: LockWait) => void }): Promise<T> {
  const started = performance.now();
  const deadline = started + budgetMs;
  let reported = false;
  const ended = (outcome: LockWait['outcome']) => {
    if (reported) report!.to({ op: report!.op, phase: 'ended', waitedMs: Math.round(performance.now() - started), outcome });
  };
  for (let delay = 1; ; delay = Math.min(delay * 2, MAX_BACKOFF_MS)) {
    let value: T;
    try {
      value = await attempt();
    } catch (error) {
      const pause = delay * (1 + Math.random() / 2);
      const now = performance.now();
      if (!isBusy(error) || now + pause > deadline) {
        ended(isBusy(error) ? 'gave-up' : 'failed');
        throw error;
      }
      if (report && !reported && now - started >= LOCK_WAIT_REPORT_MS) {
        reported = true;
        report.to({ op: report.op, phase: 'long', waitedMs: Math.round(now - started) });
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
      continue;
    }
    ended('acquired');
    return value;
  }
}

/**
 * Ms that store operations may run back to back within one turn of the event loop
 * before the next one first lets the loop turn (setImmediate, then the timers). A
 * better-sqlite3 statement answers synchronously, so a caller awaiting one operation
 * after another (a loop of `enqueue`s) never leaves the microtask queue: without this,
 * the timers of the process — a worker's heartbeat, claims, cancel poll — would not run
 * until the loop ended, and its leases would run out.
 */
export const MAX_TURN_MS = 10;

/** When the current run of operations within one event-loop turn began (performance.now()), or -1 when none ran this turn. */
let turnStartedAt = -1;

/** Resolves at once, or after a turn of the event loop when operations have run for {@link MAX_TURN_MS} within this one. */
function turnIfLong(): Promise<void> | undefined {
  const now = performance.now();
  if (turnStartedAt < 0) {
    turnStartedAt = now;
    setImmediate(() => (turnStartedAt = -1)); // the turn ended
    return undefined;
  }
  return now - turnStartedAt < MAX_TURN_MS ? undefined : new Promise((resolve) => setImmediate(resolve));
}

/**
 * The SQLite driver's operations, each retried by {@link whenUnlocked} for up to the
 * context's `busyTimeoutMs`, long waits reported to its `onLockWait`; each first lets
 * the event loop turn when operations have kept it for {@link MAX_TURN_MS}.
 */
export function retryWhileBusy(operations: Operations<SqliteContext>): Operations<SqliteContext> {
  const retrying: Record<string, unknown> = {};
  for (const [name, operation] of Object.entries(operations) as Array<[string, (context: SqliteContext, params: unknown) => Promise<unknown>]>) {
    const report = (context: SqliteContext) => (context.onLockWait ? { op: name, to: context.onLockWait } : undefined);
    const run = (context: SqliteContext, params: unknown) => whenUnlocked(async () => operation(context, params), context.busyTimeoutMs, report(context));
    retrying[name] = (context: SqliteContext, params: unknown) => {
      const turn = turnIfLong();
      return turn ? turn.then(() => run(context, params)) : run(context, params);
    };
  }
  return retrying as Operations<SqliteContext>;
}
