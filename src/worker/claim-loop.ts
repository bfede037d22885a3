import type { ClaimResult } from './fetcher.js';
import { Ticker } from './loop.js';

/** What a {@link ClaimLoop} runs and asks. */
export interface ClaimLoopOptions {
  /** Ms between passes the timer starts (the poll: the safety net behind wake-ups). */
  intervalMs: number;
  /** Passes that may be in flight at once, ≥ 1: the store's `claimsInFlight`. */
  maxInFlight: number;
  /** One claim round (fetcher.ts `fetchJobs`); it reserves its room synchronously, before its first await. */
  pass: () => Promise<ClaimResult>;
  /** Room a new round would have now, in jobs (fetcher.ts `claimRoom`); ≤ 0 when none. */
  room: () => number;
  /** As {@link Loop}'s: every failed pass with the consecutive failures so far; `error` undefined and the count once a pass succeeds again. */
  onError: (loop: string, error: unknown, failures: number) => void;
}

/**
 * The worker's fetch loop: runs claim rounds (passes) on wake-ups, freed slots and
 * every `intervalMs`, as {@link Loop} does, except that on a store that can carry
 * several statements at once (PostgreSQL's pool, `claimsInFlight`) it keeps more than
 * one pass in flight, so a claim never queues behind another:
 * ```
 * woken ─► no pass in flight ───────────────────────────────► start a pass
 *       ─► passes in flight < maxInFlight, and the last pass
 *          to end was `full` (a backlog), and room > 0 ────────► start one more
 *       ─► otherwise ─► one pass follows when one ends (wake-ups in between coalesce)
 * ```
 * An idle worker (its last pass `short`) woken twice makes one claim at a time; under a
 * backlog each freed slot's wake-up claims at once beside the claims in flight. Slot
 * accounting stays exact because each pass reserves its room before it is sent
 * (slots.ts). Every error becomes an `onError` call: no pass can raise an unhandled
 * rejection.
 */
export class ClaimLoop {
  readonly name = 'fetch';
  readonly #options: ClaimLoopOptions;
  readonly #passes = new Set<Promise<void>>();
  /** A wake-up no pass has answered yet. */
  #again = false;
  /** The last pass to end filled every claim it made: more jobs are likely due. */
  #backlog = false;
  #failures = 0;
  #stopped = false;
  readonly #ticker: Ticker;
  /** Resolves when the next pass to start ends: what runOnce() returns when it cannot start one now. */
  #next: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(options: ClaimLoopOptions) {
    this.#options = options;
    this.#ticker = new Ticker(options.intervalMs, () => void this.runOnce());
  }

  /** Passes in flight now. */
  get inFlight(): number {
    return this.#passes.size;
  }

  /** Starts the timer (unref'd: it does not keep the process alive). */
  start(): void {
    if (this.#ticker.start()) this.#stopped = false;
  }

  /** Stops the timer, starts no pass from now on, and waits for the passes in flight. */
  async stop(): Promise<void> {
    this.#ticker.stop();
    this.#stopped = true;
    this.#again = false;
    this.#next?.resolve();
    this.#next = undefined;
    await Promise.all(this.#passes);
  }

  /**
   * Claims now: starts a pass when the rules above allow one, else leaves one to follow
   * the next pass to end. Resolves when the pass it started (or the one that answers it)
   * has ended; never rejects. Does nothing once stopped.
   */
  runOnce(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#again = true;
    const started = this.#pump();
    if (started) return started;
    if (!this.#next) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#next = { promise, resolve };
    }
    return this.#next.promise;
  }

  /**
   * Whether a wake-up now would be answered by a pass that takes the completer's pending
   * completions into its claim: one starts now, or (with `maxInFlight` 1, where a write of
   * their own would wait for the same connection) one follows the pass in flight. When
   * false, the completer writes them itself, on another connection, beside the claims.
   */
  takesCompletions(): boolean {
    if (this.#stopped) return false;
    return this.#options.maxInFlight === 1 || this.#mayStart();
  }

  #mayStart(): boolean {
    const inFlight = this.#passes.size;
    if (inFlight === 0) return true;
    return inFlight < this.#options.maxInFlight && this.#backlog && this.#options.room() > 0;
  }

  /** Starts a pass if one is due and allowed; returns its end, or undefined. */
  #pump(): Promise<void> | undefined {
    if (!this.#again || this.#stopped || !this.#mayStart()) return undefined;
    this.#again = false;
    const waiting = this.#next;
    this.#next = undefined;
    const pass: Promise<void> = this.#run().finally(() => {
      this.#passes.delete(pass);
      waiting?.resolve();
      void this.#pump();
    });
    this.#passes.add(pass);
    return pass;
  }

  async #run(): Promise<void> {
    try {
      const result = await this.#options.pass();
      if (result !== 'none') this.#backlog = result === 'full';
      if (this.#failures > 0) this.#options.onError(this.name, undefined, this.#failures);
      this.#failures = 0;
    } catch (error) {
      this.#backlog = false;
      this.#options.onError(this.name, error, ++this.#failures);
    }
  }
}
