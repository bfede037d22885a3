import type { Clock } from '../clock.js';

/** The longest delay `setTimeout` honours, ms (2^31 − 1; longer fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Wakes a worker's claim loop at each time it was asked for: when a rate-limit window
 * frees a place (rate-wake.ts), or when a job this worker suspended on a durable wait
 * becomes due (ctx.sleep), so that the wake-up does not wait for the next poll. One
 * timer, armed for the earliest pending time; when it fires, the next pending one is
 * armed (a hundred sleeps ending at a hundred times wake the worker a hundred times).
 */
export class WakeTimer {
  readonly #clock: Clock;
  readonly #wake: () => void;
  #timer: NodeJS.Timeout | undefined;
  /** Pending wake-up times, ms since the epoch, ascending, without duplicates. */
  #pending: number[] = [];
  /** The time the armed timer is for (Infinity: none). */
  #armed = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(clock: Clock, wake: () => void) {
    this.#clock = clock;
    this.#wake = wake;
  }

  /** Wakes the worker at `at` (ms since the epoch; 1 ms after, so the job is due). Times years away are left to the poll. */
  armAt(at: number): void {
    if (this.#stopped || at - this.#clock.now() > MAX_TIMER_MS) return;
    const index = this.#pending.findIndex((t) => t >= at);
    if (index === -1) this.#pending.push(at);
    else if (this.#pending[index] !== at) this.#pending.splice(index, 0, at);
    this.#arm();
  }

  /** Clears the timer; nothing is armed after this. */
  stop(): void {
    this.#stopped = true;
    this.#pending = [];
    clearTimeout(this.#timer);
  }

  /** Arms the timer for the earliest pending time, unless it is armed for it already. */
  #arm(): void {
    const next = this.#pending[0];
    if (next === undefined || next === this.#armed) return;
    clearTimeout(this.#timer);
    this.#armed = next;
    this.#timer = setTimeout(() => {
      const now = this.#clock.now();
      while (this.#pending.length > 0 && this.#pending[0]! <= now) this.#pending.shift();
      this.#armed = Number.POSITIVE_INFINITY;
      this.#wake();
      this.#arm();
    }, Math.max(0, next - this.#clock.now()) + 1);
    this.#timer.unref();
  }
}
