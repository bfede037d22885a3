import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';
import type { WakeTimer } from './wake-timer.js';

/**
 * Wakes a worker the moment a full rate-limit window of a queue it serves frees a place,
 * so that a limit of 10 per second runs 10 a second rather than what the next poll
 * catches (a start leaves the window `periodMs` after it, and the poll comes every
 * `pollInterval`, 1 s by default). The store says when (`queueListRateLimits`' `nextAt`);
 * it is asked after a claim that filled fewer slots than it asked for, only while a
 * served queue has a rate (known from the last `refresh`: the first short claim's, then
 * each heartbeat's), so claims in a fleet without rate limits cost nothing more.
 */
export class RateWake {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #queues: string[];
  readonly #timer: WakeTimer;
  /** Whether a served queue had a rate limit at the last read; true until the first, so the first short claim reads. */
  #limited = true;

  constructor(deps: { store: Store; clock: Clock; queues: string[]; timer: WakeTimer }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#queues = deps.queues;
    this.#timer = deps.timer;
  }

  /**
   * Reads the served queues' rates and arms the wake-up for the earliest full window.
   * @throws StoreError when the database cannot be reached
   */
  async refresh(): Promise<void> {
    const rates = await this.#store.queueListRateLimits({ now: this.#clock.now(), queues: this.#queues });
    this.#limited = rates.length > 0;
    let next = Number.POSITIVE_INFINITY;
    for (const rate of rates) if (rate.nextAt !== null && rate.nextAt < next) next = rate.nextAt;
    if (next < Number.POSITIVE_INFINITY) this.#timer.armAt(next);
  }

  /** After a claim that filled fewer slots than it asked for: arms the wake-up when a served queue is rate-limited. */
  async afterShortClaim(): Promise<void> {
    if (this.#limited) await this.refresh();
  }
}
