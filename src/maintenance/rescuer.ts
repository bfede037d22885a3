import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { RescueReport, Store } from '../store/store.js';
import { Loop } from '../worker/loop.js';

/** What a rescuer needs from the worker that runs it. */
export interface RescuerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Time between two passes, in ms. */
  intervalMs: number;
  /**
   * Called after every pass that settled at least one job. The worker claims at
   * once when jobs were requeued: on SQLite its own change watch does not see its
   * own commit, so without this it would wait for its next poll.
   */
  onRescued(report: RescueReport): void;
  /** Called for every failed pass (see {@link Loop}); the loop goes on. */
  onError(loop: string, error: unknown, failures: number): void;
}

/**
 * The rescuer of expired leases: settles running jobs whose lease ran out anywhere
 * (the worker crashed, was killed or froze), in one `jobRescueExpired` statement:
 * ```
 * running, lease expired ──cancel requested──────► cancelled
 *                        ──last attempt used─────► failed   (+ "lease expired" error)
 *                        ──otherwise─────────────► queued now (+ "lease expired" error)
 * ```
 * Every worker runs one, every `intervalMs`, and one pass at start. Passes of
 * several workers may race: the statement settles each job once, and a job taken
 * over by a new claim in between has a fresh lease and is left alone.
 *
 * Tests call `runOnce(now)` instead of waiting for the timer.
 */
export class Rescuer {
  readonly #deps: RescuerDeps;
  readonly #loop: Loop;

  constructor(deps: RescuerDeps) {
    this.#deps = deps;
    this.#loop = new Loop('rescue', deps.intervalMs, async () => void (await this.runOnce()), deps.onError);
  }

  /** Starts the timer (it does not keep the process alive). */
  start(): void {
    this.#loop.start();
  }

  /** Stops the timer and waits for a timed pass in progress. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /**
   * Runs the loop's pass now (coalesced with one in progress); never rejects, its
   * errors go to `onError`. Does nothing once stopped.
   */
  tick(): Promise<void> {
    return this.#loop.runOnce();
  }

  /**
   * One pass: settles every job whose lease expired before `now`, logs what it did,
   * and calls `onRescued` when it settled anything.
   * @param now - ms since the epoch; defaultValue the clock's now
   * @returns the ids requeued, failed and cancelled; all empty when no lease had expired
   * @throws StoreError when the database cannot be reached (op "jobRescueExpired")
   */
  async runOnce(now = this.#deps.clock.now()): Promise<RescueReport> {
    const report = await this.#deps.store.jobRescueExpired({ now });
    if (report.requeued.length + report.failed.length + report.cancelled.length > 0) {
      this.#deps.logger.warn(report, 'rescued jobs whose lease expired');
      this.#deps.onRescued(report);
    }
    return report;
  }
}
