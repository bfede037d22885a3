import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { StoreError } from '../errors.js';
import type { Completion, Store } from '../store/store.js';
import { RETRY_MIN_MS, nextRetryDelay } from './persist.js';

interface Pending {
  item: Completion;
  /** When the run's lease would expire (ms since the epoch); retries stop then. */
  deadline: () => number;
  resolve: (written: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Batches job completions: every completion requested in one event-loop turn is
 * written by one fenced `jobCompleteMany` (one transaction), flushed on
 * `setImmediate`. Through a database outage (StoreError) the batch is retried with
 * backoff; each completion gives up when its run's lease would expire. Safe if the
 * process dies before a flush: the jobs are still `running` under a lease that will
 * expire, and run again.
 */
export class Completer {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #pending: Pending[] = [];
  #scheduled = false;
  #retryDelay = RETRY_MIN_MS;

  constructor(store: Store, clock: Clock, logger: Logger) {
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
  }

  /**
   * Queues a completion; resolves true when written, false when the lease was lost.
   * Rejects with the StoreError when the database stayed unreachable past `deadline`.
   */
  complete(item: Completion, deadline: () => number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, deadline, resolve, reject });
      this.#schedule(0);
    });
  }

  #schedule(delayMs: number): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const run = () => void this.#flush();
    if (delayMs === 0) setImmediate(run);
    else setTimeout(run, delayMs);
  }

  async #flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    this.#scheduled = false;
    try {
      const written = new Set(await this.#store.jobCompleteMany({ items: batch.map((b) => b.item), now: this.#clock.now() }));
      this.#retryDelay = RETRY_MIN_MS;
      for (const entry of batch) entry.resolve(written.has(entry.item.id));
    } catch (error) {
      const delay = this.#retryDelay;
      this.#retryDelay = nextRetryDelay(delay);
      const now = this.#clock.now();
      for (const entry of batch) {
        if (error instanceof StoreError && now + delay < entry.deadline()) this.#pending.push(entry);
        else entry.reject(error);
      }
      if (this.#pending.length > 0) {
        this.#logger.warn({ err: error, jobs: this.#pending.length, retryInMs: delay }, 'writing completions failed; retrying until the leases would expire');
        this.#schedule(delay);
      }
    }
  }
}
