import type { Clock } from '../clock.js';
import type { Store, SuspendItem } from '../store/store.js';

interface Pending {
  item: SuspendItem;
  resolve: (suspended: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Batches the suspensions of runs on durable waits (`ctx.sleep`, `ctx.receive`, awaited
 * children): every suspension requested in one event-loop turn is written by one
 * `jobSuspend` (one transaction, one commit), flushed on `setImmediate`. The runs one
 * claim started usually reach their first wait in the same turn; one commit each cost
 * S5 on PostgreSQL ~1 s for 100 runs (~5 ms a commit on the benchmark server;
 * docs/benchmarks.md). A failed write rejects every suspension of its batch; the run's
 * `persist` retries it (into a later batch) within its lease.
 */
export class Suspender {
  readonly #store: Store;
  readonly #clock: Clock;
  #pending: Pending[] = [];
  #scheduled = false;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /**
   * Queues one run's suspension.
   * @returns true once written (the job suspended, or cancelled by a request that came
   *   first), false when the lease was lost (nothing written)
   * @throws what the store threw (a StoreError through an outage)
   */
  suspend(item: SuspendItem): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      setImmediate(() => void this.#flush());
    });
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    try {
      const written = new Set(await this.#store.jobSuspend({ items: batch.map((b) => b.item), now: this.#clock.now() }));
      for (const entry of batch) entry.resolve(written.has(entry.item.id));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
