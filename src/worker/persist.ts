import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { StoreError } from '../errors.js';

/** Retry delays in ms for writes through a database outage: doubling from 100 ms to 2 s. */
export const RETRY_MIN_MS = 100;
export const RETRY_MAX_MS = 2000;

/**
 * How long the first try of a write whose deadline had already passed when it began is
 * still waited for, ms. A run whose lease ran out while its process was frozen (SIGSTOP,
 * a long GC pause) must hear the store's answer: a refusal by the fencing token is what
 * tells it that another worker owns the job, and stops it; giving up at once would leave
 * it running blind. 5 s covers a busy database's answer, and bounds a stuck one.
 */
export const STALE_TRY_MS = 5000;

/** The longest delay `setTimeout` honours, ms (2^31 − 1; longer fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** The next retry delay after `delay` ms. */
export const nextRetryDelay = (delay: number) => Math.min(RETRY_MAX_MS, delay * 2);

/**
 * Runs a write about a running job, retrying it through a database outage
 * (StoreError) with backoff until `deadline()` (ms since the epoch: when the run's
 * lease would expire, or the worker's stop gives up on writes if sooner) would
 * pass before the next try; then rethrows. Past the lease's end another worker may
 * own the job, so giving up is right: the lease expires and the job is rescued.
 * Other errors (bugs, ConflictError) are thrown at once. A first try begun past the
 * deadline is still given STALE_TRY_MS to answer (the fenced answer stops a stale run),
 * unless `stopDeadline` (the worker's stop giving up on writes) has passed.
 * @param options.logger - asked for only when a retry is logged (a run makes its logger on first use)
 */
export async function persist<T>(write: () => Promise<T>, options: { deadline: () => number; clock: Clock; logger: () => Logger; op: string; stopDeadline?: () => number }): Promise<T> {
  for (let delay = RETRY_MIN_MS, failures = 0; ; delay = nextRetryDelay(delay)) {
    try {
      // One try never outlasts the deadline either: a store can hold a call far longer
      // (SQLite waiting for a write lock another process holds, up to its lock budget).
      const trying = write();
      const deadline = options.deadline();
      const now = options.clock.now();
      const late = failures === 0 && deadline <= now && now < (options.stopDeadline?.() ?? Number.POSITIVE_INFINITY);
      if (!(await settlesBy(trying, late ? now + STALE_TRY_MS : deadline, options.clock))) {
        throw new StoreError(options.op, null, `store operation ${options.op} did not complete by its deadline (the lease's end, or the stop's budget); abandoned`);
      }
      const written = await trying;
      if (failures > 0) options.logger().info({ op: options.op, failures }, 'database write succeeded after retrying');
      return written;
    } catch (error) {
      if (!(error instanceof StoreError) || options.clock.now() + delay >= options.deadline()) throw error;
      // The first failure and every 10th after it: a few lines per outage, not one per retry.
      if (failures++ % 10 === 0) {
        options.logger().warn({ err: error, op: options.op, retryInMs: delay, failures }, 'database write failed; retrying until the lease would expire (or the stop\'s budget runs out)');
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * Waits for `work` until `deadline` (ms since the epoch, by `clock`): true when it
 * settled by then (fulfilled or rejected), false when the deadline came first. Past the
 * deadline `work` is abandoned: left to end by itself, its rejection swallowed. For the
 * writes about a job and the steps of a stop, which must never wait out a store that
 * cannot answer (another process holding SQLite's write lock, a database down).
 */
export async function settlesBy(work: Promise<unknown>, deadline: number, clock: Clock): Promise<boolean> {
  const settled = work.then(() => true, () => true);
  const ms = deadline - clock.now();
  if (ms > MAX_TIMER_MS) return settled; // no deadline (Infinity), or none a timer can hold
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))));
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}
