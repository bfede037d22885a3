import type { Logger } from 'pino';
import {
  CancelledError,
  ConflictError,
  LeaseLostError,
  NonRetryableError,
  SnoozeError,
  describeError,
  describeStack,
  STORED_TEXT_LIMITS,
  truncateText,
} from '../errors.js';
import { DEFAULT_BACKOFF, backoffDelay } from '../job/backoff.js';
import { serializeJson } from '../job/payload.js';
import type { AnyTask } from '../job/task.js';
import type { ClaimedJob, JobWait, Json } from '../job/types.js';
import type { TraceSpan } from '../observe/tracing.js';
import type { EnqueueItem } from '../client/enqueue.js';
import type { NewJob } from '../store/store.js';
import type { StepLog } from '../workflow/steps.js';
import { persist } from './persist.js';
import type { ExecutorDeps } from './run-deps.js';

/** What a {@link RunOutcome} reads from and does to its run: executor.ts's JobRun itself (no object of closures per run). */
export interface RunHost {
  /** The run's logger (made on first use). */
  readonly logger: Logger;
  /** Whether the run's logger writes lines at `level` (asked before a debug line, so that a run that writes none makes no logger). */
  logs(level: 'debug'): boolean;
  /** When the lease runs out unless renewed, ms since the epoch. */
  readonly leaseExpiresAt: number;
  /** When the handler began, ms since the epoch (`job:completed`'s durationMs runs from it). */
  readonly startedAt: number;
  /** The handler returned or threw. */
  readonly settled: boolean;
  /** Frees the run's concurrency slot. */
  freeSlot(): void;
  /** Aborts the handler's signal (a refused write: the lease was lost). */
  abort(reason: LeaseLostError): void;
}

/**
 * The writes of one run about its job, all fenced by its lease token: those during the
 * run (steps, message takes, checkpoints) and its one outcome — completed (batched by the
 * completer, with its follow-ups), failed (a retry or for good), cancelled, released or
 * snoozed, or suspended on a durable wait (batched by the suspender). `holding` is true
 * while the run holds the lease and has recorded no outcome; each outcome clears it
 * first, so no second outcome is written. A write the store refuses means the lease was
 * lost: logged, `write:dropped` and `lease:lost` emitted, never retried. A write that
 * fails (database unreachable) is retried until the lease's end or the worker's stop
 * deadline (persist.ts).
 */
export class RunOutcome {
  readonly job: ClaimedJob;
  /** True while the run holds the lease and has recorded no outcome. */
  holding = true;
  readonly #task: AnyTask;
  readonly #deps: ExecutorDeps;
  readonly #span: TraceSpan;
  readonly #host: RunHost;
  /** The follow-ups of the completion (`ctx.enqueueOnComplete`), in call order, each settling to the job checked, or undefined when refused. */
  readonly #followUps: Array<Promise<NewJob | undefined>> = [];

  constructor(job: ClaimedJob, task: AnyTask, deps: ExecutorDeps, span: TraceSpan, host: RunHost) {
    this.job = job;
    this.#task = task;
    this.#deps = deps;
    this.#span = span;
    this.#host = host;
    // Assigned here, not as a field initializer: no `__name` wrapper per run (see context.ts's createContext).
    this.#writeDeadline = () => Math.min(this.#host.leaseExpiresAt, this.#deps.stopDeadline());
  }

  get #logger(): Logger {
    return this.#host.logger;
  }

  /** A debug line, when debug lines are written: most runs make no logger of their own. */
  #debug(fields: object | undefined, message: string): void {
    if (this.#host.logs('debug')) this.#logger.debug(fields, message);
  }

  /** Sets the span's `baton.outcome`, with an event when given. */
  outcome(outcome: string, event?: Parameters<TraceSpan['event']>): void {
    this.#span.set({ 'baton.outcome': outcome });
    if (event) this.#span.event(...event);
  }

  /**
   * A fenced write during the run (a step, a message take): retried through an outage;
   * refused (false: the lease was lost) or this run no longer holding, it drops the write
   * and aborts the handler with a LeaseLostError, so a stale holder stops mid-step.
   */
  async fenced<T>(op: string, write: () => Promise<T | false>): Promise<T | false> {
    const written = this.holding ? await this.persist(op, write) : false;
    if (written === false) {
      if (this.holding) this.#written(false, op);
      this.#host.abort(new LeaseLostError(`${op} refused: this run no longer holds the job`));
    }
    return written;
  }

  /**
   * Suspends the run on a durable wait: the job back to queued (attempt not counted,
   * slot freed), `wait` stored, due at its end (or at once when a message it waits for
   * is there). A cancel requested meanwhile ends it cancelled.
   */
  async suspend(wait: JobWait): Promise<void> {
    if (!this.holding) return;
    const deps = this.#deps;
    this.holding = false;
    const until = wait.until.getTime();
    const item = { id: this.job.id, token: this.job.leaseToken, runAt: until, wait: JSON.stringify({ ...wait, until }) };
    const suspended = await this.persist('jobSuspend', () => deps.suspender.suspend(item));
    if (!this.#written(suspended, 'jobSuspend')) return;
    this.outcome('waiting', ['baton.waiting', { 'baton.wait': wait.kind, 'baton.wait.until': wait.until.toISOString() }]);
    this.#debug({ wait }, 'run suspended on a durable wait (attempt not counted, slot freed)');
    deps.events.emit('job:waiting', { job: this.job, wait });
  }

  /** Until when an outcome write may be retried: the lease's end, or the worker's stop deadline if sooner. */
  readonly #writeDeadline: () => number;

  /** Runs an outcome write, retrying through a database outage until the lease's end or the stop deadline. */
  persist<T>(op: string, write: () => Promise<T>): Promise<T> {
    return persist(write, { deadline: this.#writeDeadline, stopDeadline: this.#deps.stopDeadline, clock: this.#deps.clock, logger: () => this.#logger, op });
  }

  #written(ok: boolean, op: string): boolean {
    if (ok) return true;
    this.holding = false;
    this.#logger.warn({ op }, 'write dropped: this run no longer holds the job (fencing token changed)');
    this.outcome('lease_lost', ['baton.lease_lost', { 'baton.write': op }]);
    this.#deps.events.emit('write:dropped', { job: this.job, op });
    this.#deps.events.emit('lease:lost', { job: this.job });
    return false;
  }

  /**
   * `ctx.enqueueOnComplete`: checks the follow-up now and keeps it for the completion.
   * Refused once the handler settled: its completion may be on its way already.
   */
  enqueueOnComplete(item: EnqueueItem): Promise<void> {
    if (this.#host.settled) {
      return Promise.reject(new ConflictError(`job ${this.job.id}: enqueueOnComplete after the handler returned or threw; call it (and await it) before the handler returns, or enqueue at once with ctx.enqueue`));
    }
    const prepared = this.#deps.client.prepare(item);
    this.#followUps.push(prepared.catch(() => undefined));
    const checked = prepared.then(() => undefined);
    checked.catch(() => undefined); // a refusal the handler does not await is not an unhandled rejection
    return checked;
  }

  async complete(value: unknown, steps?: StepLog): Promise<void> {
    if (!this.holding) return;
    const orphans = steps?.orphans() ?? [];
    if (orphans.length > 0) {
      this.#logger.warn({ steps: orphans }, 'stored steps this run never reached (renamed or removed since they ran?); their results are kept but unused');
      this.#span.event('baton.steps_orphaned', { 'baton.steps': orphans.join(', ') });
      this.#deps.events.emit('job:steps-orphaned', { job: this.job, steps: orphans });
      // In the job's timeline too; a failure to write it (the lease lost) is the completion's to find.
      await this.#deps.store.jobStepsOrphaned({ id: this.job.id, token: this.job.leaseToken, steps: orphans, now: this.#deps.clock.now() }).catch(() => undefined);
      if (!this.holding) return;
    }
    let result: string;
    try {
      result = serializeJson(value === undefined ? null : value, 'result', this.#deps.payloadLimit);
    } catch (error) {
      return this.fail(new NonRetryableError(`handler returned an invalid result: ${describeError(error)}`));
    }
    // Follow-ups still being checked (an enqueueOnComplete the handler did not await) are waited for; refused ones are left out.
    const enqueue = this.#followUps.length === 0 ? [] : (await Promise.all(this.#followUps)).filter((job) => job !== undefined);
    if (!this.holding) return;
    const deps = this.#deps;
    this.holding = false;
    const writing = deps.completer.complete({ id: this.job.id, token: this.job.leaseToken, result, ...(enqueue.length > 0 ? { enqueue } : {}) }, this.#writeDeadline);
    this.#host.freeSlot();
    const enqueued = await writing;
    if (!this.#written(enqueued !== null, 'jobComplete') || enqueued === null) return;
    if (enqueued.length > 0) deps.client.enqueued(enqueued);
    this.#debug(undefined, 'job completed');
    this.outcome('completed');
    deps.events.emit('job:completed', { job: this.job, result: JSON.parse(result) as Json, durationMs: deps.clock.now() - this.#host.startedAt, enqueued: enqueued.map((e) => e.job) });
  }

  async fail(error: unknown): Promise<void> {
    if (!this.holding) return;
    const deps = this.#deps;
    const now = deps.clock.now();
    const final = error instanceof NonRetryableError || this.job.attempt >= this.job.maxAttempts;
    const retryAt = final ? null : now + backoffDelay(this.#task.backoff ?? DEFAULT_BACKOFF, this.job.attempt);
    const message = truncateText(describeError(error), STORED_TEXT_LIMITS.message);
    const stack = describeStack(error);
    const stored = { attempt: this.job.attempt, time: now, message, stack: stack === null ? null : truncateText(stack, STORED_TEXT_LIMITS.stack) };
    this.holding = false;
    const written = await this.persist('jobFail', () => deps.store.jobFail({ id: this.job.id, token: this.job.leaseToken, error: stored, retryAt, now }));
    if (!this.#written(written, 'jobFail')) return;
    this.outcome(retryAt === null ? 'failed' : 'retry');
    this.#span.fail(error);
    if (retryAt !== null) this.#span.set({ 'baton.retry_at': new Date(retryAt).toISOString() });
    // The outcome line (observe/log-job-outcomes.ts) carries the message at warn; the stack is here, at debug.
    const text = retryAt === null ? 'job failed' : 'attempt failed; will retry';
    if (this.#host.logs('debug')) {
      try {
        this.#logger.debug({ err: error, retryAt }, text);
      } catch {
        // pino's error serializer reads `message` and `stack`, which may be getters
        // that throw (C23): log the description instead, and still emit the event.
        this.#logger.debug({ err: { message, stack: stored.stack }, retryAt }, text);
      }
    }
    deps.events.emit('job:failed', { job: this.job, error, message, retryAt: retryAt === null ? null : new Date(retryAt) });
  }

  async cancelled(reason: CancelledError): Promise<void> {
    if (!this.holding) return;
    const deps = this.#deps;
    this.holding = false;
    const written = await this.persist('jobFinishCancelled', () => deps.store.jobFinishCancelled({ id: this.job.id, token: this.job.leaseToken, now: deps.clock.now() }));
    if (!this.#written(written, 'jobFinishCancelled')) return;
    this.#debug(undefined, 'job cancelled');
    this.outcome('cancelled');
    deps.events.emit('job:cancelled', { job: this.job, reason: reason.reason });
  }

  /**
   * Hands the job back, attempt not counted, checkpoint kept: an aborted run at
   * shutdown keeps its runAt (due at once, in its place in line); a snooze is due
   * after its delay, placed as a job delayed to then. A cancel requested meanwhile ends it cancelled.
   */
  async release(snooze?: SnoozeError): Promise<void> {
    if (!this.holding) return;
    const deps = this.#deps;
    this.holding = false;
    const now = deps.clock.now();
    const runAt = now + (snooze?.delayMs ?? 0);
    const lease = { id: this.job.id, token: this.job.leaseToken };
    const cause = snooze ? (snooze.code === 'rate_limited' ? 'rateLimited' : 'snooze') : 'shutdown';
    const released = await this.persist('jobRelease', () => deps.store.jobRelease({ leases: [lease], now, cause, ...(snooze ? { runAt } : {}) }));
    if (!this.#written(released.length === 1, 'jobRelease')) return;
    if (snooze) {
      this.outcome('snoozed', ['baton.snoozed', { 'baton.delay_ms': snooze.delayMs, 'baton.rate_limited': snooze.code === 'rate_limited' }]);
      this.#debug({ delayMs: snooze.delayMs, reason: snooze.code }, 'job snoozed (attempt not counted, checkpoint kept)');
      deps.events.emit('job:snoozed', { job: this.job, delayMs: snooze.delayMs, runAt: new Date(runAt), rateLimited: snooze.code === 'rate_limited' });
    } else {
      this.outcome('released', ['baton.released', { 'baton.abandoned': false }]);
      this.#debug(undefined, 'job released for another worker (attempt not counted, checkpoint kept)');
      deps.events.emit('job:released', { job: this.job });
    }
  }
}
