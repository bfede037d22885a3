import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { StoreError } from '../errors.js';
import type { CompletedJobs, Completion, InsertedJob, Store } from '../store/store.js';
import { RETRY_MIN_MS, nextRetryDelay } from './persist.js';

interface Pending {
  item: Completion;
  /** When the run's lease would expire (ms since the epoch); retries stop then. */
  deadline: () => number;
  /** With the follow-ups inserted ([] when none) when written; null when the lease was lost. */
  resolve: (written: InsertedJob[] | null) => void;
  reject: (error: unknown) => void;
}

/**
 * The completions {@link Completer.take} handed to a caller that writes them itself
 * (with a claim, in one transaction: `jobCompleteAndClaim`); it must call exactly one
 * of `settle` and `fail`.
 */
export interface TakenCompletions {
  readonly items: Completion[];
  /** The write succeeded: `written` says which were completed (the others lost their lease) and their follow-ups. */
  settle(written: CompletedJobs): void;
  /** The write failed: each completion is retried (StoreError, within its lease) or rejected, as a flush does. */
  fail(error: unknown): void;
}

/**
 * Batches job completions: every completion requested in one event-loop turn is
 * written by one fenced `jobCompleteMany` (one transaction, each completion's
 * follow-ups included), flushed on
 * `setImmediate` — or, when the worker is about to claim (`combine` returns true),
 * taken by that claim ({@link take}) and written in the claim's own transaction, one
 * commit for both. Through a database outage (StoreError) the batch is retried with
 * backoff; each completion gives up when its run's lease would expire. Safe if the
 * process dies before a flush: the jobs are still `running` under a lease that will
 * expire, and run again.
 */
export class Completer {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #combine: (() => boolean) | undefined;
  #pending: Pending[] = [];
  #scheduled = false;
  #retryDelay = RETRY_MIN_MS;

  /**
   * @param combine - called at each flush: true when a claim will run soon and take the
   *   pending completions (the flush then writes nothing); false to write them now.
   */
  constructor(store: Store, clock: Clock, logger: Logger, combine?: () => boolean) {
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
    this.#combine = combine;
  }

  /**
   * Queues a completion (with its follow-ups, `item.enqueue`, written in the same
   * transaction); resolves with the follow-ups inserted ([] when none) once written,
   * null when the lease was lost (nothing written, follow-ups included).
   * Rejects with the StoreError when the database stayed unreachable past `deadline`.
   */
  complete(item: Completion, deadline: () => number): Promise<InsertedJob[] | null> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, deadline, resolve, reject });
      this.#schedule(0);
    });
  }

  /** Takes every pending completion, for a caller that writes them in a transaction of its own. */
  take(): TakenCompletions {
    const batch = this.#pending;
    this.#pending = [];
    return {
      items: batch.map((b) => b.item),
      settle: (written) => this.#settle(batch, written),
      fail: (error) => this.#failed(batch, error),
    };
  }

  /** From now on every flush writes by itself (the worker stopped claiming); flushes what is pending. */
  detach(): void {
    this.#combine = undefined;
    if (this.#pending.length > 0) this.#schedule(0);
  }

  #schedule(delayMs: number): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const run = () => void this.#flush();
    if (delayMs === 0) setImmediate(run);
    else setTimeout(run, delayMs);
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    if (this.#pending.length === 0 || this.#combine?.()) return;
    const batch = this.#pending;
    this.#pending = [];
    try {
      this.#settle(batch, await this.#store.jobCompleteMany({ items: batch.map((b) => b.item), now: this.#clock.now() }));
    } catch (error) {
      this.#failed(batch, error);
    }
  }

  #settle(batch: Pending[], written: CompletedJobs): void {
    const ids = new Set(written.completed);
    const enqueued = written.enqueued.length === 0 ? undefined : new Map(written.enqueued.map((e) => [e.id, e.jobs]));
    this.#retryDelay = RETRY_MIN_MS;
    for (const entry of batch) entry.resolve(ids.has(entry.item.id) ? enqueued?.get(entry.item.id) ?? [] : null);
  }

  #failed(batch: Pending[], error: unknown): void {
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
