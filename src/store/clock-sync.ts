import type { Logger } from 'pino';
import type { ClockReading, Store } from './store.js';

/** How far this host's clock may differ from the database's before a warning, in ms. */
export const CLOCK_SKEW_WARN_MS = 1000;

/** @defaultValue 60 s: how often the offset is measured again. */
const SYNC_INTERVAL_MS = 60_000;

/** How often this host's wall clock is compared with its monotonic clock, ms. */
const STEP_CHECK_MS = 1000;

/** A change of wall clock minus monotonic clock larger than this between two checks is a step of the wall clock, ms. */
export const CLOCK_STEP_MS = 1000;

/**
 * Keeps {@link Store.clock} on the database's time: {@link ClockSync.runOnce}
 * measures the offset once (`store.clockSync()`), `start()` does so every
 * `intervalMs` on an unref'd timer until `stop()`. The first time this host's clock
 * is found more than {@link CLOCK_SKEW_WARN_MS} away from the database's, one
 * warning is logged (`{ offsetMs, roundTripMs }`); Baton keeps working on the
 * database's time either way. A failed measurement is logged at warn and keeps the
 * previous offset (0 before the first success); it never throws out of the loop.
 */
export class ClockSync {
  readonly #store: Store;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #stepTimer: NodeJS.Timeout | undefined;
  #warned = false;
  /** `Date.now() − performance.now()` at the latest step check, ms. */
  #wallMinusMonotonic = Date.now() - performance.now();

  constructor(deps: { store: Store; logger: Logger; intervalMs?: number }) {
    this.#store = deps.store;
    this.#logger = deps.logger;
    this.#intervalMs = deps.intervalMs ?? SYNC_INTERVAL_MS;
  }

  /**
   * Measures once and warns on a first large skew.
   * @returns the reading, or undefined when the database could not be reached
   */
  async runOnce(): Promise<ClockReading | undefined> {
    try {
      return await this.first();
    } catch (error) {
      this.#logger.warn({ err: error }, "could not read the database's clock; keeping the previous offset");
      return undefined;
    }
  }

  /**
   * Measures once and warns on a first large skew, like {@link runOnce}, but a
   * database that does not answer is an error: the measurement `createBaton` makes
   * at open, which is also the first statement on the pool (on PostgreSQL with a
   * direct URL, migrations went elsewhere).
   * @throws StoreError (op clockSync) when the database cannot be reached
   */
  async first(): Promise<ClockReading> {
    const reading = await this.#store.clockSync();
    if (!this.#warned && Math.abs(reading.offsetMs) > CLOCK_SKEW_WARN_MS) {
      this.#warned = true;
      const direction = reading.offsetMs < 0 ? 'ahead of' : 'behind';
      this.#logger.warn(
        reading,
        `this host's clock is ${Math.abs(reading.offsetMs)} ms ${direction} the database's; Baton uses the database's time (fix NTP on this host)`,
      );
    }
    return reading;
  }

  /**
   * Measures again every interval, and at once after a step of this host's wall clock
   * (checked every {@link STEP_CHECK_MS} ms; logged at warn). Unref'd timers: they never
   * keep the process alive.
   */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.runOnce(), this.#intervalMs);
    this.#timer.unref();
    this.#wallMinusMonotonic = Date.now() - performance.now();
    this.#stepTimer = setInterval(() => void this.checkStep(), STEP_CHECK_MS);
    this.#stepTimer.unref();
  }

  /**
   * Compares this host's wall clock with its monotonic clock: when their difference moved
   * by more than {@link CLOCK_STEP_MS} since the last check, the wall clock was stepped
   * (NTP, a VM resumed, an operator): logs it and measures the offset again at once.
   * Baton's time on PostgreSQL is carried on the monotonic clock between measurements
   * (ServerClock), so a step never moved it; on SQLite it is this host's clock itself.
   * @returns the step, ms (positive: forward), or 0 when none was seen
   */
  async checkStep(): Promise<number> {
    const now = Date.now() - performance.now();
    const stepMs = Math.round(now - this.#wallMinusMonotonic);
    this.#wallMinusMonotonic = now;
    if (Math.abs(stepMs) <= CLOCK_STEP_MS) return 0;
    this.#logger.warn({ stepMs }, `this host's wall clock stepped ${stepMs > 0 ? 'forward' : 'back'} by ${Math.abs(stepMs)} ms; measuring the offset to the database's clock again now`);
    await this.runOnce();
    return stepMs;
  }

  stop(): void {
    clearInterval(this.#timer);
    clearInterval(this.#stepTimer);
    this.#timer = undefined;
    this.#stepTimer = undefined;
  }
}
