import type { Clock } from '../clock.js';

/** The longest delay `setTimeout` honours, ms (2^31 − 1; longer fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * One timer that wakes a worker's claim loop at the earliest time it was asked for:
 * when a rate-limit window frees a place (rate-wake.ts), or when a job this worker
 * suspended on a durable wait becomes due (ctx.sleep), so that the wake-up does not
 * wait for the next poll. Asking for a later time than the armed one changes nothing.
 */
export class WakeTimer {
  readonly #clock: Clock;
  readonly #wake: () => void;
  #timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires, ms since the epoch (Infinity: none). */
  #at = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(clock: Clock, wake: () => void) {
    this.#clock = clock;
    this.#wake = wake;
  }

  /** Wakes the worker at `at` (ms since the epoch; 1 ms after, so the job is due), unless an earlier wake-up is armed. */
  armAt(at: number): void {
    if (this.#stopped || at >= this.#at) return;
    const ms = Math.max(0, at - this.#clock.now()) + 1;
    if (ms > MAX_TIMER_MS) return; // years away: the poll will have found it long before
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(() => {
      this.#at = Number.POSITIVE_INFINITY;
      this.#wake();
    }, ms);
    this.#timer.unref();
  }

  /** Clears the timer; nothing is armed after this. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }
}
