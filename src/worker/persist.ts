import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { StoreError } from '../errors.js';

/** Retry delays in ms for writes through a database outage: doubling from 100 ms to 2 s. */
export const RETRY_MIN_MS = 100;
export const RETRY_MAX_MS = 2000;

/** The next retry delay after `delay` ms. */
export const nextRetryDelay = (delay: number) => Math.min(RETRY_MAX_MS, delay * 2);

/**
 * Runs a write about a running job, retrying it through a database outage
 * (StoreError) with backoff until `deadline()` (ms since the epoch: when the run's
 * lease would expire, or the worker's stop gives up on writes if sooner) would
 * pass before the next try; then rethrows. Past the lease's end another worker may
 * own the job, so giving up is right: the lease expires and the job is rescued.
 * Other errors (bugs, ConflictError) are thrown at once.
 */
export async function persist<T>(write: () => Promise<T>, options: { deadline: () => number; clock: Clock; logger: Logger; op: string }): Promise<T> {
  for (let delay = RETRY_MIN_MS, failures = 0; ; delay = nextRetryDelay(delay)) {
    try {
      const written = await write();
      if (failures > 0) options.logger.info({ op: options.op, failures }, 'database write succeeded after retrying');
      return written;
    } catch (error) {
      if (!(error instanceof StoreError) || options.clock.now() + delay >= options.deadline()) throw error;
      // The first failure and every 10th after it: a few lines per outage, not one per retry.
      if (failures++ % 10 === 0) {
        options.logger.warn({ err: error, op: options.op, retryInMs: delay, failures }, 'database write failed; retrying until the lease would expire (or the stop\'s budget runs out)');
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
