import * as z from 'zod';
import { sleep as delay } from '../clock.js';
import { BatonError, brand, ValidationError } from '../errors.js';
import { serializeJson } from '../job/payload.js';
import { NEVER, type Json, type JobWait } from '../job/types.js';
import { parseInput } from '../validation.js';
import type { StepLog } from './steps.js';

/**
 * Durable waits (issue 32): `ctx.sleep`, `ctx.sleepUntil`, `ctx.receive`. Each is a step
 * with a reserved name (`baton:sleep`, `baton:receive:<topic>`, numbered as any step), so
 * a replay knows where the run stood. A wait that ends within {@link LIVE_WAIT_MS} is
 * waited in the process; a longer one suspends the run:
 *
 * ```
 * wait ──ends within LIVE_WAIT_MS──► in-process timer (cancel-aware), then on
 *   └──longer──► WaitSuspension thrown ──► the executor suspends the job (jobSuspend:
 *                attempt not counted, slot freed, `job.wait` set, view `waiting`), due at
 *                the wait's end, or woken by a message (jobMessageSend) ──► any worker runs
 *                the handler again: the steps before replay, the wait finds its end passed
 *                (or its message), and the run goes on
 * ```
 * A cancel while suspended finds the job queued and ends it `cancelled` at once.
 */

/**
 * Waits up to this long stay in the process (ms); longer ones free the slot. A suspension
 * costs a release, a claim and a replay (a few ms on SQLite); 50 ms keeps short pauses
 * (polling an API every few ms) cheap without holding a slot noticeably.
 */
export const LIVE_WAIT_MS = 50;

/** The longest sleep, ms: 10 years. */
export const MAX_WAIT_MS = 315_360_000_000;

/** The most characters of a receive's topic. */
export const TOPIC_MAX = 200;

/**
 * Thrown by a wait to end the run for now; the executor releases the job as waiting.
 * A handler that catches it must rethrow it (or return: the run suspends either way, and
 * every later step or wait of the run throws it again).
 */
export class WaitSuspension extends BatonError {
  readonly wait: JobWait;
  constructor(wait: JobWait) {
    super('suspended', `run suspended: ${describeWait(wait)}`);
    this.wait = wait;
  }
}
brand(WaitSuspension, 'WaitSuspension');

/**
 * What a wait waits for, in words: `sleeps until <ISO>`, `waits for a message on "<topic>"
 * until <ISO>` (or `with no deadline`), `waits for 3 child jobs (12, 13, 14)`.
 */
export function describeWait(wait: JobWait): string {
  if (wait.kind === 'sleep') return `sleeps until ${wait.until.toISOString()}`;
  if (wait.kind === 'children') return `waits for ${wait.ids.length} child job${wait.ids.length === 1 ? '' : 's'} (${wait.ids.join(', ')})`;
  const topic = JSON.stringify(wait.topic);
  return wait.until.getTime() >= NEVER ? `waits for a message on ${topic} with no deadline` : `waits for a message on ${topic} until ${wait.until.toISOString()}`;
}

/** Options of `ctx.receive`. */
export interface ReceiveOptions {
  /** How long to wait for a message, ms (0..10 years), counted from the first call (kept across suspensions); then `receive` returns null. @defaultValue none: waits until a message comes */
  timeout?: number;
}

export const topicSchema = z.string().min(1).max(TOPIC_MAX).refine((s) => !s.includes('\u0000'), 'must not contain NUL');
const msSchema = z.number().int().min(0).max(MAX_WAIT_MS);
const receiveOptionsSchema = z.strictObject({ timeout: msSchema.optional() });

/** What the waits need from the run. */
export interface WaitHost {
  steps: StepLog;
  signal: AbortSignal;
  now(): number;
  payloadLimit: number;
  attempt: number;
  /** The fenced take of a message (store.jobMessageTake through the run's retries); false when the lease was lost. */
  take(params: { topic: string; step: string; seq: number; until: number }): Promise<{ payload: string } | { until: number } | false>;
}

/**
 * The durable waits of one run. After one suspended the run, every later wait or step
 * throws the same suspension (the run is over; the handler must not go on).
 */
export class Waits {
  readonly #host: WaitHost;
  #suspension: WaitSuspension | undefined;

  constructor(host: WaitHost) {
    this.#host = host;
  }

  /** The suspension of this run, once a wait made one. */
  get suspension(): WaitSuspension | undefined {
    return this.#suspension;
  }

  /** @throws the run's WaitSuspension when one was made */
  checkNotSuspended(): void {
    if (this.#suspension) throw this.#suspension;
  }

  /**
   * `ctx.sleep(ms)`: resumes once `ms` has passed since the first call (a replay does not restart it).
   * @throws ValidationError when `ms` is not an integer 0..MAX_WAIT_MS
   */
  async sleep(ms: number): Promise<void> {
    const checked = parseInput(msSchema, ms, `sleep: ms must be an integer 0..${MAX_WAIT_MS}; got ${String(ms)}`);
    await this.#sleepTo((now) => now + checked);
  }

  /**
   * `ctx.sleepUntil(date)`: resumes at `date` (at once when it has passed).
   * @throws ValidationError when `date` is not a valid Date or ms number within 10 years
   */
  async sleepUntil(date: Date | number): Promise<void> {
    const at = date instanceof Date ? date.getTime() : date;
    if (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at > NEVER) {
      throw new ValidationError(`sleepUntil: expected a valid Date or ms since the epoch; got ${String(date)}`, [{ path: ['date'], message: 'must be a valid Date' }]);
    }
    await this.#sleepTo(() => at);
  }

  /**
   * `ctx.receive(topic, options)`: the next message sent to this job on `topic`, taken
   * exactly once (a step: a replay returns the same message); null once `timeout` passed.
   * @throws ValidationError for a bad topic or options
   */
  async receive<T = Json>(topic: string, options?: ReceiveOptions): Promise<T | null> {
    const checkedTopic = parseInput(topicSchema, topic, 'receive: invalid topic');
    const o = options === undefined ? {} : parseInput(receiveOptionsSchema, options, 'invalid receive options', { subject: 'options' });
    this.checkNotSuspended();
    const host = this.#host;
    const id = host.steps.identity(`baton:receive:${checkedTopic}`);
    host.signal.throwIfAborted();
    const stored = await host.steps.stored(id);
    if (stored?.state === 'completed') {
      host.steps.report({ step: id, outcome: 'replayed', durationMs: 0, tries: 0, resultBytes: Buffer.byteLength(stored.result ?? 'null') });
      return JSON.parse(stored.result ?? 'null') as T | null;
    }
    const seq = host.steps.seqOf(stored);
    const now = host.now();
    const taken = await host.take({ topic: checkedTopic, step: id, seq, until: o.timeout === undefined ? NEVER : now + o.timeout });
    if (taken === false) throw host.signal.reason ?? new Error('lease lost');
    const startedAt = stored?.startedAt ?? now;
    if ('payload' in taken) {
      host.steps.remember({ name: id, seq, state: 'completed', attempt: host.attempt, tries: 1, startedAt, finishedAt: now, result: taken.payload, error: null });
      host.steps.report({ step: id, outcome: 'run', durationMs: now - startedAt, tries: 1, resultBytes: Buffer.byteLength(taken.payload) });
      return JSON.parse(taken.payload) as T;
    }
    if (taken.until <= host.now()) {
      const end = host.now();
      await host.steps.save({ name: id, seq, state: 'completed', attempt: host.attempt, tries: 1, startedAt, finishedAt: end, result: 'null', error: null });
      host.steps.report({ step: id, outcome: 'run', durationMs: end - startedAt, tries: 1, resultBytes: 4 });
      return null;
    }
    throw this.suspend({ kind: 'message', topic: checkedTopic, until: new Date(taken.until) });
  }

  /** A sleep to the time `end(now)` gives on the first call, stored as step `baton:sleep`. */
  async #sleepTo(end: (now: number) => number): Promise<void> {
    this.checkNotSuspended();
    const host = this.#host;
    const id = host.steps.identity('baton:sleep');
    host.signal.throwIfAborted();
    const stored = await host.steps.stored(id);
    let until: number;
    if (stored?.state === 'completed') {
      until = Number(stored.result);
      host.steps.report({ step: id, outcome: 'replayed', durationMs: 0, tries: 0, resultBytes: Buffer.byteLength(stored.result ?? '') });
    } else {
      const now = host.now();
      until = end(now);
      const text = serializeJson(until, 'sleep end', host.payloadLimit);
      await host.steps.save({ name: id, seq: host.steps.seqOf(stored), state: 'completed', attempt: host.attempt, tries: 1, startedAt: now, finishedAt: now, result: text, error: null });
      host.steps.report({ step: id, outcome: 'run', durationMs: 0, tries: 1, resultBytes: Buffer.byteLength(text) });
    }
    const left = until - host.now();
    if (left <= 0) return;
    if (left <= LIVE_WAIT_MS) return delay(left, host.signal);
    throw this.suspend({ kind: 'sleep', until: new Date(until) });
  }

  /** Ends the run for now on `wait` (children.ts uses it too); every later wait or step of the run throws the same. @returns the WaitSuspension to throw */
  suspend(wait: JobWait): WaitSuspension {
    this.#suspension = new WaitSuspension(wait);
    return this.#suspension;
  }
}
