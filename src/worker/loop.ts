import type { Logger } from 'pino';
import type { TypedEmitter } from '../observe/events.js';
import type { WorkerEvents } from './events.js';

/**
 * A background loop: runs `body` every `intervalMs`, never two at once, and turns
 * every error into a call of `onError` (so no loop can raise an unhandled
 * rejection). Tests call `runOnce()` directly instead of waiting for the timer.
 */
export class Loop {
  readonly name: string;
  readonly #body: () => Promise<void>;
  readonly #onError: (loop: string, error: unknown, failures: number) => void;
  /** Consecutive failed runs; 0 after a success. */
  #failures = 0;
  readonly #ticker: Ticker;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  /**
   * @param onError - called for every failed run with the number of consecutive
   *   failures so far (1 for the first), and with `error` undefined and the count of
   *   failures once a run succeeds again after failing
   */
  constructor(name: string, intervalMs: number, body: () => Promise<void>, onError: (loop: string, error: unknown, failures: number) => void) {
    this.name = name;
    this.#body = body;
    this.#onError = onError;
    this.#ticker = new Ticker(intervalMs, () => void this.runOnce());
  }

  /** Starts the timer. The timer does not keep the process alive. */
  start(): void {
    if (this.#ticker.start()) this.#stopped = false;
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    this.#ticker.stop();
    this.#stopped = true;
    this.#again = false;
    await this.#running;
  }

  /**
   * Runs the body now. If a run is in progress, one more run follows it (calls in
   * between coalesce). Resolves when the runs it caused are done; never rejects.
   * Does nothing once the loop is stopped.
   */
  runOnce(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        if (this.#stopped) break;
        try {
          await this.#body();
          if (this.#failures > 0) this.#onError(this.name, undefined, this.#failures);
          this.#failures = 0;
        } catch (error) {
          this.#onError(this.name, error, ++this.#failures);
        }
      } while (this.#again);
      this.#running = undefined;
    })();
    return this.#running;
  }
}

/** A loop's timer: calls `tick` every `intervalMs` between start() and stop(); it does not keep the process alive. */
export class Ticker {
  readonly #intervalMs: number;
  readonly #tick: () => void;
  #timer: NodeJS.Timeout | undefined;

  constructor(intervalMs: number, tick: () => void) {
    this.#intervalMs = intervalMs;
    this.#tick = tick;
  }

  /** Starts the timer; false (and nothing done) when it runs already. */
  start(): boolean {
    if (this.#timer) return false;
    this.#timer = setInterval(this.#tick, this.#intervalMs);
    this.#timer.unref();
    return true;
  }

  /** Stops the timer; start() may start it again. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * The `onError` of a worker's loops: logs a failure (the first of a run of failures and
 * every 50th after it: through an outage every loop fails on each tick) and emits
 * `worker:error` for each; logs the recovery; once the worker has stopped, a pass the stop
 * abandoned (it waited on a store that could not answer) fails as the store closes:
 * expected, so only a debug line.
 */
export function loopErrorReporter(to: { logger: Logger; events: TypedEmitter<WorkerEvents>; workerId: string; stopped: () => boolean }): (loop: string, error: unknown, failures: number) => void {
  const { logger, events, workerId } = to;
  return (loop, error, failures) => {
    if (to.stopped()) {
      logger.debug({ err: error, loop }, 'background loop pass abandoned by the stop ended');
      return;
    }
    if (error === undefined) {
      logger.info({ loop, failures }, 'background loop recovered');
      return;
    }
    if (failures === 1 || failures % 50 === 0) logger.error({ err: error, loop, failures }, 'background loop failed; it will try again');
    events.emit('worker:error', { workerId, loop, error });
  };
}
