import type { Clock } from '../clock.js';
import type { Completion, Store } from '../store/store.js';

/**
 * Batches job completions: every completion requested in one event-loop turn is
 * written by one fenced `jobCompleteMany` (one transaction), flushed on
 * `setImmediate`. Safe if the process dies before a flush: the jobs are still
 * `running` under a lease that will expire, and run again.
 */
export class Completer {
  readonly #store: Store;
  readonly #clock: Clock;
  #pending: Array<{ item: Completion; resolve: (written: boolean) => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** Queues a completion; resolves true when written, false when the lease was lost. Rejects with StoreError. */
  complete(item: Completion): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    this.#scheduled = false;
    try {
      const written = new Set(await this.#store.jobCompleteMany({ items: batch.map((b) => b.item), now: this.#clock.now() }));
      for (const entry of batch) entry.resolve(written.has(entry.item.id));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
