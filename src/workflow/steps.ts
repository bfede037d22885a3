import * as z from 'zod';
import { sleep, type Clock } from '../clock.js';
import { ConflictError, LeaseLostError, NonRetryableError, TimeoutError, ValidationError, describeError, STORED_TEXT_LIMITS, truncateText } from '../errors.js';
import { backoffDelay, backoffSchema, type Backoff } from '../job/backoff.js';
import { serializeJson } from '../job/payload.js';
import type { ClaimedJob } from '../job/types.js';
import type { TraceSpan } from '../observe/tracing.js';
import type { StepRecord } from '../store/store.js';
import { parseInput } from '../validation.js';

/**
 * `ctx.step(name, fn, options?)`: steps whose results are stored and replayed (issue 32).
 *
 * ```
 * step "charge" ──stored completed──► replayed: its stored result, fn not run
 *       │
 *       └──not stored──► lease run out by the worker's clock? ──► LeaseLostError, fn not run
 *                            │ no
 *                            └──► fn(signal) ──resolves──► result saved (fenced) ──► returned
 *                            │                        └─refused: lease lost → signal aborted, LeaseLostError
 *                            └──throws──► tries left (options.maxAttempts)? backoff, run again
 *                                         else: saved `failed`, the error rethrown (the attempt fails)
 * ```
 * Identity: the name, then `name#2`, `name#3`… for later calls with one name in one run
 * (Absurd's `name#N`, Inngest's `:N`), so steps may sit in loops, and be reordered or
 * added between deploys. The stored log loads once per run, in one query, before the
 * first step runs; each new step then costs one statement (its fenced save). A completed
 * step that a completing run never reached is reported once, as orphaned.
 */

/** Options of `ctx.step`. */
export interface StepOptions {
  /** Tries of `fn` inside this run before the step fails (and with it the attempt), 1..100. @defaultValue 1 */
  maxAttempts?: number;
  /** Delay between those tries. @defaultValue exponential from 1000 ms, capped at 1 h, with jitter (job/backoff.ts) */
  backoff?: Backoff;
  /** Per-try timeout, ms (1..2147483647): `fn`'s signal aborts with a TimeoutError and the try fails. @defaultValue none */
  timeout?: number;
}

/** A step's function: gets a signal that aborts with the run's (cancel, shutdown, lease lost, timeout) or the step's timeout. */
export type StepFn<T> = (signal: AbortSignal) => T | Promise<T>;

/** The most characters of a step name (its occurrence suffix not counted). */
export const STEP_NAME_MAX = 200;

const nameSchema = z.string().min(1).max(STEP_NAME_MAX).refine((s) => !s.includes('\u0000') && !s.startsWith('baton:'), 'must not contain NUL or start with "baton:" (reserved for sleeps and receives)');
const optionsSchema = z.strictObject({
  maxAttempts: z.number().int().min(1).max(100).optional(),
  backoff: backoffSchema.optional(),
  timeout: z.number().int().min(1).max(2_147_483_647).optional(),
});

/** What a {@link StepLog} needs from its run. */
export interface StepHost {
  job: ClaimedJob;
  signal: AbortSignal;
  clock: Clock;
  payloadLimit: number;
  /** The job's stored steps (one query). */
  load(): Promise<StepRecord[]>;
  /** The fenced save of one step (retried through an outage); false when the lease was lost (the run is then aborted). */
  save(step: StepRecord): Promise<boolean>;
  /** A step ran (`run`, `failed`) or was replayed from storage (`replayed`). */
  report(event: StepEvent): void;
  /** The span of a step that runs (`step <name>`, under the run's span); ended by the step. */
  span(step: string): TraceSpan;
  /** False once the handler returned or threw: a step called then is refused before its function runs. */
  active(): boolean;
  /**
   * True when the run's lease has run out by the worker's clock (the process was frozen past
   * it, or the database away: another worker may own the job); the host has then aborted
   * the run as lost. A step's function does not start then: its save would be refused, but
   * its side effects could not be taken back (a run frozen mid-handler woke and ran a step
   * the job's next run had already completed: seen in the soak, issue 34).
   */
  leaseRunOut(): boolean;
}

/** One step's outcome in a run: what `job:step` carries. */
export interface StepEvent {
  /** Its identity (`name`, `name#2`…). */
  step: string;
  outcome: 'run' | 'replayed' | 'failed';
  /** ms the step's function took, all tries; 0 when replayed. */
  durationMs: number;
  /** Tries of the function in this run (0 when replayed). */
  tries: number;
  /** Size of the stored result's JSON text, bytes; null when none. */
  resultBytes: number | null;
  /** The last try's error message, when `failed`. */
  error?: string;
}

/**
 * The step log of one run: names to identities, the stored log loaded lazily once,
 * new steps run and saved. Used by the run's context (`ctx.step`, and by the durable
 * waits in waits.ts, which are steps with reserved names).
 */
export class StepLog {
  readonly #host: StepHost;
  #loading: Promise<Map<string, StepRecord>> | undefined;
  /** The stored log once loaded, with the steps this run saved since. */
  #stored: Map<string, StepRecord> | undefined;
  readonly #counts = new Map<string, number>();
  /** The identities this run reached, in call order. */
  readonly #reached = new Set<string>();
  /** The steps of this run whose function is running (not yet saved): see {@link StepLog.idle}. */
  readonly #running = new Set<Promise<unknown>>();
  #lastSeq = 0;

  constructor(host: StepHost) {
    this.#host = host;
  }

  /** The identity of the next call named `name` in this run: `name`, then `name#2`, … */
  identity(name: string): string {
    const n = (this.#counts.get(name) ?? 0) + 1;
    this.#counts.set(name, n);
    const id = n === 1 ? name : `${name}#${n}`;
    this.#reached.add(id);
    return id;
  }

  /** The stored step `id`, loading the log on first use (one query per run). */
  async stored(id: string): Promise<StepRecord | undefined> {
    this.#loading ??= this.#host.load().then((steps) => {
      for (const s of steps) this.#lastSeq = Math.max(this.#lastSeq, s.seq);
      return (this.#stored = new Map(steps.map((s) => [s.name, s])));
    });
    return (await this.#loading).get(id);
  }

  /** The seq of step `id`: its stored one, else the next free one. */
  seqOf(stored: StepRecord | undefined): number {
    return stored?.seq ?? ++this.#lastSeq;
  }

  /** Reports a step of a caller (waits.ts, children.ts: a sleep, a receive, a child) as `job:step`. */
  report(event: StepEvent): void {
    this.#host.report(event);
  }

  /** Records a step written by a caller (waits.ts) in the loaded log. */
  remember(step: StepRecord): void {
    this.#stored?.set(step.name, step);
  }

  /**
   * `ctx.step`: see the module's comment.
   * @throws ValidationError (bad name or options), NonRetryableError (a result that is
   *   not JSON or over the payload limit: fails the job, steps kept), LeaseLostError (the
   *   save was refused), or what `fn` threw on its last try
   */
  async run<T>(name: string, fn: StepFn<T>, options?: StepOptions): Promise<T> {
    const checkedName = parseInput(nameSchema, name, 'invalid step name');
    const o = options === undefined ? {} : parseInput(optionsSchema, options, 'invalid step options', { subject: 'options' });
    if (typeof fn !== 'function') throw new ValidationError('step function must be a function', [{ path: ['fn'], message: 'must be a function' }]);
    const host = this.#host;
    if (!host.active()) {
      throw new ConflictError(`step "${checkedName}" called after the handler returned or threw: its run has ended, and a step runs only inside the handler (await every step before returning)`);
    }
    const id = this.identity(checkedName);
    host.signal.throwIfAborted();
    const stored = await this.stored(id);
    if (stored?.state === 'completed') {
      host.report({ step: id, outcome: 'replayed', durationMs: 0, tries: 0, resultBytes: stored.result === null ? null : Buffer.byteLength(stored.result) });
      return JSON.parse(stored.result ?? 'null') as T;
    }
    const span = host.span(id);
    const running = this.#runNew(id, this.seqOf(stored), fn, o, span);
    this.#running.add(running);
    try {
      return await running;
    } catch (error) {
      span.fail(error);
      throw error;
    } finally {
      this.#running.delete(running);
      span.end();
    }
  }

  /**
   * Resolves once no step of this run is running (each has saved its outcome, or failed
   * to): a wait that suspends the run while a step runs beside it (`Promise.all` of a sleep
   * and a step) suspends only after that step, so its result is stored and it never runs
   * again on the next run.
   */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** Runs a step not stored as completed: its tries, then its fenced save. */
  async #runNew<T>(id: string, seq: number, fn: StepFn<T>, o: StepOptions, span: TraceSpan): Promise<T> {
    const host = this.#host;
    const startedAt = host.clock.now();
    const maxTries = o.maxAttempts ?? 1;
    for (let tries = 1; ; tries++) {
      if (host.leaseRunOut()) host.signal.throwIfAborted(); // aborted with a LeaseLostError
      let value: unknown;
      try {
        value = await span.within(() => this.#try(id, fn, o.timeout));
      } catch (error) {
        host.signal.throwIfAborted(); // the run is ending: its reason, not the step's error, tells why
        if (tries < maxTries) {
          await sleep(backoffDelay(o.backoff ?? { type: 'exponential' }, tries), host.signal);
          continue;
        }
        const message = truncateText(describeError(error), STORED_TEXT_LIMITS.message);
        const now = host.clock.now();
        await this.save({ name: id, seq, state: 'failed', attempt: host.job.attempt, tries, startedAt, finishedAt: now, result: null, error: message });
        host.report({ step: id, outcome: 'failed', durationMs: now - startedAt, tries, resultBytes: null, error: message });
        throw error;
      }
      let text: string;
      try {
        text = serializeJson(value, `result of step "${id}"`, host.payloadLimit);
      } catch (error) {
        throw new NonRetryableError(`step "${id}" returned an invalid result: ${describeError(error)}`, { cause: error });
      }
      const now = host.clock.now();
      await this.save({ name: id, seq, state: 'completed', attempt: host.job.attempt, tries, startedAt, finishedAt: now, result: text, error: null });
      span.set({ 'baton.step.tries': tries, 'baton.step.result_bytes': Buffer.byteLength(text) });
      host.report({ step: id, outcome: 'run', durationMs: now - startedAt, tries, resultBytes: Buffer.byteLength(text) });
      return JSON.parse(text) as T; // what a replay returns: the same JSON round trip
    }
  }

  /**
   * The completed steps stored for this job that this run never reached: called when
   * the run completes (a suspended or failed run may not have reached them yet).
   */
  orphans(): string[] {
    if (this.#stored === undefined) return [];
    return [...this.#stored.values()].filter((s) => s.state === 'completed' && !this.#reached.has(s.name)).map((s) => s.name);
  }

  /** One try of step `id`'s `fn`, its signal aborted by the run's or by `timeoutMs` (a TimeoutError naming the step). */
  async #try<T>(id: string, fn: StepFn<T>, timeoutMs: number | undefined): Promise<T> {
    const run = this.#host.signal;
    if (timeoutMs === undefined) return fn(run);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimeoutError(timeoutMs, `step "${id}" timed out after ${timeoutMs} ms`)), timeoutMs);
    const signal = AbortSignal.any([run, controller.signal]);
    try {
      return await Promise.race([
        Promise.resolve(fn(signal)),
        new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true })),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Saves a step, fenced, and keeps it in the loaded log; the run is aborted by the host when refused. @throws LeaseLostError when refused */
  async save(step: StepRecord): Promise<void> {
    if (!(await this.#host.save(step))) throw new LeaseLostError(`step "${step.name}" not saved: this run no longer holds the job`);
    this.remember(step);
  }
}
