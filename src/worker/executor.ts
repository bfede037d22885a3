import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import {
  CancelledError,
  ConflictError,
  LeaseLostError,
  NonRetryableError,
  ShutdownError,
  SnoozeError,
  TimeoutError,
  ValidationError,
  describeError,
  describeStack,
  STORED_TEXT_LIMITS,
  truncateText,
} from '../errors.js';
import { DEFAULT_BACKOFF, backoffDelay } from '../job/backoff.js';
import { serializeJson } from '../job/payload.js';
import { validatePayload, type AnyTask } from '../job/task.js';
import type { ClaimedJob, JobWait, Json } from '../job/types.js';
import type { TypedEmitter } from '../observe/events.js';
import type { TraceSpan, Tracing } from '../observe/tracing.js';
import type { WorkerEvents } from './events.js';
import type { NewJob, Store } from '../store/store.js';
import type { EnqueueItem } from '../client/enqueue.js';
import type { Completer } from './completer.js';
import type { Suspender } from './suspender.js';
import { createContext, type HandlerClient } from './context.js';
import { persist } from './persist.js';
import { StepLog } from '../workflow/steps.js';
import { Waits } from '../workflow/waits.js';
import { Children } from '../workflow/children.js';

/** What a run needs from its worker. */
export interface ExecutorDeps {
  store: Store;
  /** Batches completions into one write per event-loop turn. */
  completer: Completer;
  /** Writes the suspensions of one turn's runs on durable waits together (jobSuspend). */
  suspender: Suspender;
  clock: Clock;
  logger: Logger;
  events: TypedEmitter<WorkerEvents>;
  workerId: string;
  /** A `process <task>` span per run (observe/tracing.ts). */
  tracing: Tracing;
  /** `ctx.baton`, and the checks and announcement of `ctx.enqueueOnComplete`'s follow-ups. */
  client: HandlerClient;
  payloadLimit: number;
  progressInterval: number;
  abortGrace: number;
  cancelGrace: number;
  /**
   * When the worker's stop gives up on writes about jobs (ms since the epoch, by
   * `clock`); Infinity until a stop begins. Outcome writes retry through a database
   * outage until this or the lease's end, whichever comes first.
   */
  stopDeadline: () => number;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * One attempt of one job, from claim to outcome.
 *
 * ```
 * running ──handler resolves──────────────► complete (fenced), with its follow-ups (ctx.enqueueOnComplete)
 *    │    ──handler throws────────────────► fail: retry with backoff, or failed
 *    │
 *    └─ signal aborts with reason R:
 *         TimeoutError  → failed attempt recorded at once; slot held until the handler
 *                         settles or abortGrace passes
 *         CancelledError→ wait until the handler settles or cancelGrace passes → cancelled
 *         LeaseLostError→ nothing recorded (another run owns the job)
 *         ShutdownError → handler resolves: completed; throws: released (attempt not
 *                         counted); still running after abortGrace: left for the
 *                         shutdown's final release
 *    └─ a durable wait suspended the run (ctx.sleep, ctx.receive: workflow/waits.ts),
 *       however the handler then settled → released as `waiting` (attempt not counted)
 * ```
 * Steps and message takes (workflow/) write during the run, fenced and retried as the
 * outcome writes are; a refused one aborts the handler with a LeaseLostError.
 * A run claimed ahead of a free slot (the worker's `prefetch`) is made **waiting**: it
 * holds the lease (the heartbeat renews it) but its handler starts only at
 * {@link JobRun.start} (`job:started` is emitted as a handler begins, and `job:completed`'s
 * `durationMs` runs from then). Aborted while waiting, it ends without running the
 * handler, and without `job:aborted`: cancelled (CancelledError), released with the
 * attempt not counted (ShutdownError), or dropped (LeaseLostError).
 *
 * `slotFreed` resolves when the run no longer needs its concurrency slot: once a
 * completion is queued for the batched write (so the next claim overlaps it), or
 * once any other outcome is written; `done` when everything, writes included, is
 * over. Every write is fenced by the lease token;
 * a refused write means the lease was lost and is logged, never retried. A write
 * that fails (database unreachable) is retried until the lease would expire or the
 * worker's stop gives up (`stopDeadline`), then the run is `stranded`: the job stays
 * `running` in the database until its lease expires and it is rescued.
 *
 * Each run has its span (`process <task>`, a child of the enqueue's): the handler runs
 * in it, its outcome sets `baton.outcome` (and status ERROR on a failure), and span
 * events mark a checkpoint, an abort (`baton.cancel_requested`, `baton.shutdown_requested`,
 * `baton.timeout`), `baton.lease_lost`, `baton.snoozed` and `baton.released`. It ends with
 * the run, or, for a job the shutdown takes back, once that release is written
 * ({@link JobRun.handedBack}).
 */
export class JobRun {
  readonly job: ClaimedJob;
  readonly task: AnyTask;
  /** Resolves when this run no longer needs its concurrency slot. */
  readonly slotFreed: Promise<void>;
  /** Resolves when the run is over, its outcome written (or given up). */
  readonly done: Promise<void>;
  #freeSlot!: () => void;
  #slotFree = false;
  readonly #deps: ExecutorDeps;
  readonly #controller = new AbortController();
  #jobLogger: Logger | undefined;
  #startedAt: number;
  /** False while the run waits for a slot (claimed ahead); see {@link start}. */
  #started: boolean;
  #begin!: () => void;
  readonly #begun = new Promise<void>((resolve) => (this.#begin = resolve));
  /** True while this run holds the lease and has recorded no outcome. */
  #holding = true;
  /** The handler's promise settled (an abandoned handler never does). */
  #settled = false;
  /** The outcome write gave up (database unreachable): the job stays running in the database until its lease expires. */
  #stranded = false;
  /** `done` resolved: no write of this run is pending. */
  #over = false;
  /** Resolves when the shutdown takes the job back (relinquish): an aborted handler is waited for no longer. */
  #relinquished!: () => void;
  readonly #handedBack = new Promise<null>((resolve) => (this.#relinquished = () => resolve(null)));
  #timeout: NodeJS.Timeout | undefined;
  readonly #span: TraceSpan;
  /** The shutdown took the job back ({@link relinquish}): {@link handedBack} ends the span once the release is written. */
  #awaitingRelease = false;
  /** When the lease runs out unless renewed (ms since the epoch); the heartbeat moves it. */
  leaseExpiresAt: number;
  /** The follow-ups of the completion (`ctx.enqueueOnComplete`), in call order, each settling to the job checked, or undefined when refused. */
  readonly #followUps: Array<Promise<NewJob | undefined>> = [];

  /** @param waiting - claimed ahead of a free slot: the handler starts at {@link start}, not now */
  constructor(job: ClaimedJob, task: AnyTask, deps: ExecutorDeps, waiting = false) {
    this.job = job;
    this.task = task;
    this.#deps = deps;
    this.#started = !waiting;
    this.#startedAt = deps.clock.now();
    this.#span = deps.tracing.run(job, deps.workerId);
    this.leaseExpiresAt = job.leaseExpiresAt?.getTime() ?? this.#startedAt;
    this.slotFreed = new Promise((resolve) => (this.#freeSlot = () => {
      this.#slotFree = true;
      resolve();
    }));
    this.done = this.#run().finally(() => {
      this.#over = true;
      this.#freeSlot();
      // Still held (a handler the shutdown abandoned) or taken back: the shutdown's release ends it.
      if (!this.#holding && !this.#awaitingRelease) this.#span.end();
    });
  }

  /** The run's logger, bound to job id, attempt and task; made on first use (most runs never log). */
  get #logger(): Logger {
    return (this.#jobLogger ??= this.#deps.logger.child({ component: 'job', jobId: this.job.id, attempt: this.job.attempt, task: this.job.task }));
  }

  /** False while the run waits for a slot (claimed ahead, handler not started). */
  get started(): boolean {
    return this.#started;
  }

  /**
   * Starts the handler of a waiting run (a slot is free for it). A run whose lease has
   * run out by the worker's clock (the process was frozen past it: another worker may
   * already have taken the job) is not started: its lease counts as lost.
   * A run already aborted (a cancel, the shutdown, a lost lease: its end is on the way
   * in a microtask) is not started either, so it takes no slot it will not use.
   * @returns whether it started now (false: it had started, ended, been aborted, or its lease ran out)
   */
  start(): boolean {
    if (this.#started || !this.#holding || this.#controller.signal.aborted) return false;
    const now = this.#deps.clock.now();
    if (this.leaseExpiresAt <= now) {
      this.leaseLost();
      return false;
    }
    this.#started = true;
    this.#startedAt = now;
    this.#begin();
    return true;
  }

  /** True while the run holds the lease and its outcome is not yet recorded. */
  get holding(): boolean {
    return this.#holding;
  }

  /** True once the run no longer occupies a concurrency slot. */
  get slotFree(): boolean {
    return this.#slotFree;
  }

  /** True once the handler returned or threw; false while it runs or after it was abandoned. */
  get settled(): boolean {
    return this.#settled;
  }

  /** True when the run's outcome write gave up: the job is still `running` in the database, under this run's lease until it expires. */
  get stranded(): boolean {
    return this.#stranded;
  }

  /** True once no write of this run is pending (`done` resolved). */
  get writesSettled(): boolean {
    return this.#over;
  }

  get aborted(): boolean {
    return this.#controller.signal.aborted;
  }

  /**
   * Aborts the handler's signal with `reason` (first reason wins), logged and emitted
   * as `job:aborted`. A waiting run (not started) is ended instead, with neither: no
   * handler ran, and its outcome (`job:cancelled`, `job:released`, `lease:lost`) is
   * the one report of its end.
   */
  abort(reason: CancelledError | ShutdownError | TimeoutError | LeaseLostError): void {
    if (this.#controller.signal.aborted || this.#settled) return;
    const event = abortEvent(reason);
    if (event) this.#span.event(...event);
    if (this.#started) this.#logger.debug({ reason: reason.code }, 'aborting job');
    this.#controller.abort(reason);
    if (this.#started) this.#deps.events.emit('job:aborted', { job: this.job, reason });
  }

  /** The lease was found lost (heartbeat or a refused write): stop holding, abort the handler. */
  leaseLost(): void {
    if (!this.#holding) return;
    this.#holding = false;
    this.#logger.warn('lease lost: another worker took the job over; this run stops and its writes are dropped');
    this.#outcome('lease_lost', ['baton.lease_lost']);
    this.#deps.events.emit('lease:lost', { job: this.job });
    this.abort(new LeaseLostError());
  }

  /**
   * Hands the job back (shutdown step 4) if still held; returns true when it was
   * held. The run no longer waits for an aborted handler: it has nothing left to write.
   */
  relinquish(): boolean {
    const held = this.#holding;
    this.#holding = false;
    this.#awaitingRelease ||= held;
    this.#relinquished();
    return held;
  }

  /**
   * The shutdown's release of a job it took back ({@link relinquish}) is over:
   * `released` when written, false when it gave up. Ends the run's span.
   */
  handedBack(released: boolean): void {
    this.#outcome(released ? 'released' : 'unreleased', released ? ['baton.released', { 'baton.abandoned': !this.#settled }] : undefined);
    this.#span.end();
  }

  /** Sets the span's `baton.outcome`, with an event when given. */
  #outcome(outcome: string, event?: Parameters<TraceSpan['event']>): void {
    this.#span.set({ 'baton.outcome': outcome });
    if (event) this.#span.event(...event);
  }

  async #run(): Promise<void> {
    const { job } = this;
    const deps = this.#deps;
    const signal = this.#controller.signal;
    const abortedWith = new Promise<Error>((resolve) => {
      if (signal.aborted) resolve(signal.reason as Error);
      signal.addEventListener('abort', () => resolve(signal.reason as Error), { once: true });
    });
    if (!this.#started && (await Promise.race([this.#begun.then(() => false), abortedWith.then(() => true)]))) {
      return this.#endWaiting(signal.reason as Error);
    }
    deps.events.emit('job:started', { job });
    const { steps, waits, children } = this.#workflow(signal);
    const { ctx, flush, dispose } = createContext({
      steps,
      waits,
      children,
      job,
      signal,
      logger: () => this.#logger,
      payloadLimit: deps.payloadLimit,
      progressInterval: deps.progressInterval,
      writeCheckpoint: async (text, value) => {
        if (!this.#holding) return false;
        // Retried through a database outage, as outcomes are: a blip must not fail the attempt.
        const held = await this.#persist('jobCheckpoint', () => deps.store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: text }));
        if (held) {
          this.#span.event('baton.checkpoint');
          deps.events.emit('job:checkpoint', { job, checkpoint: value });
        }
        return held;
      },
      writeProgress: async (progress) => {
        if (!this.#holding) return true;
        const held = await deps.store.jobProgress({ id: job.id, token: job.leaseToken, progress });
        if (held) deps.events.emit('job:progress', { job, progress });
        return held;
      },
      onLeaseLost: () => this.leaseLost(),
      client: deps.client.api,
      enqueueOnComplete: (item) => this.#enqueueOnComplete(item),
    });

    if (job.timeoutMs !== null) {
      this.#timeout = setTimeout(() => this.abort(new TimeoutError(job.timeoutMs!)), job.timeoutMs);
      this.#timeout.unref(); // the worker keeps the process alive while it runs; an abandoned run must not
    }
    const handler = this.#span.within(() => this.#invoke(ctx));

    const first = await Promise.race([handler.then((s) => ({ kind: 'settled' as const, s })), abortedWith.then((r) => ({ kind: 'aborted' as const, r }))]);
    try {
      if (first.kind === 'settled' && !signal.aborted) {
        await flush().catch(() => undefined);
        if (waits.suspension) await this.#suspend(waits.suspension.wait);
        else if (first.s.ok) await this.#complete(first.s.value, steps);
        else if (first.s.error instanceof SnoozeError) await this.#release(first.s.error);
        else await this.#fail(first.s.error);
        return;
      }
      const reason = first.kind === 'aborted' ? first.r : (signal.reason as Error);
      // The last throttled progress is written before the outcome (writes are fenced:
      // after the outcome they would be refused).
      const flushed = () => flush().catch(() => undefined);
      if (reason instanceof TimeoutError) {
        await flushed();
        await this.#fail(reason);
        await this.#waitSettled(handler, deps.abortGrace);
      } else if (reason instanceof CancelledError) {
        await this.#waitSettled(handler, deps.cancelGrace);
        await flushed();
        await this.#cancelled(reason);
      } else if (reason instanceof ShutdownError) {
        const settled = await this.#waitSettled(handler, deps.abortGrace);
        await flushed();
        if (settled && waits.suspension) await this.#suspend(waits.suspension.wait);
        else if (settled?.ok) await this.#complete(settled.value, steps);
        else if (settled) await this.#release();
        // not settled: the shutdown releases it (step 4)
      } else {
        await this.#waitSettled(handler, deps.abortGrace);
      }
    } catch (error) {
      this.#strand(error);
    } finally {
      clearTimeout(this.#timeout);
      dispose();
    }
  }

  /**
   * The run's step log and durable waits (workflow/), their writes fenced and retried
   * through an outage as the run's other writes are; a refused one ends the run as a lost lease.
   */
  #workflow(signal: AbortSignal): { steps: StepLog; waits: Waits; children: Children } {
    const { job } = this;
    const deps = this.#deps;
    const steps = new StepLog({
      job,
      signal,
      clock: deps.clock,
      payloadLimit: deps.payloadLimit,
      load: () => deps.store.jobStepList({ id: job.id }),
      save: async (step) => (await this.#fenced('jobStepSave', () => deps.store.jobStepSave({ id: job.id, token: job.leaseToken, step }))) !== false,
      report: (event) => {
        if (event.outcome === 'replayed') this.#span.event('baton.step_replayed', { 'baton.step': event.step });
        deps.events.emit('job:step', { job, ...event });
      },
      span: (step) => deps.tracing.step(job, step),
    });
    const waits = new Waits({
      steps,
      signal,
      now: () => deps.clock.now(),
      payloadLimit: deps.payloadLimit,
      attempt: job.attempt,
      take: (p) => this.#fenced('jobMessageTake', () => deps.store.jobMessageTake({ id: job.id, token: job.leaseToken, attempt: job.attempt, now: deps.clock.now(), ...p })),
    });
    const children = new Children({
      steps,
      waits,
      signal,
      prepare: (item) => deps.client.prepare(item),
      insert: (children) => this.#fenced('jobEnqueueChildren', () => deps.store.jobEnqueueChildren({ id: job.id, token: job.leaseToken, attempt: job.attempt, now: deps.clock.now(), children })),
      list: () => deps.store.jobChildren({ id: job.id }),
      enqueued: (child) => deps.client.enqueued([{ job: child, created: true }]),
      active: () => !this.#settled,
    });
    return { steps, waits, children };
  }

  /**
   * A fenced write during the run (a step, a message take): retried through an outage;
   * refused (false: the lease was lost) or this run no longer holding, it drops the write
   * and aborts the handler with a LeaseLostError, so a stale holder stops mid-step.
   */
  async #fenced<T>(op: string, write: () => Promise<T | false>): Promise<T | false> {
    const written = this.#holding ? await this.#persist(op, write) : false;
    if (written === false) {
      if (this.#holding) this.#written(false, op);
      this.abort(new LeaseLostError(`${op} refused: this run no longer holds the job`));
    }
    return written;
  }

  /**
   * Suspends the run on a durable wait: the job back to queued (attempt not counted,
   * slot freed), `wait` stored, due at its end (or at once when a message it waits for
   * is there). A cancel requested meanwhile ends it cancelled.
   */
  async #suspend(wait: JobWait): Promise<void> {
    if (!this.#holding) return;
    const deps = this.#deps;
    this.#holding = false;
    const until = wait.until.getTime();
    const item = { id: this.job.id, token: this.job.leaseToken, runAt: until, wait: JSON.stringify({ ...wait, until }) };
    const suspended = await this.#persist('jobSuspend', () => deps.suspender.suspend(item));
    if (!this.#written(suspended, 'jobSuspend')) return;
    this.#outcome('waiting', ['baton.waiting', { 'baton.wait': wait.kind, 'baton.wait.until': wait.until.toISOString() }]);
    this.#logger.debug({ wait }, 'run suspended on a durable wait (attempt not counted, slot freed)');
    deps.events.emit('job:waiting', { job: this.job, wait });
  }

  /** A waiting run aborted before its start: no handler ran, so nothing is abandoned. */
  async #endWaiting(reason: Error): Promise<void> {
    this.#settled = true;
    try {
      if (reason instanceof CancelledError) await this.#cancelled(reason);
      else if (reason instanceof ShutdownError) await this.#release();
      // LeaseLostError: another worker holds the job; nothing to write.
    } catch (error) {
      this.#strand(error);
    }
  }

  /** A store failure while recording the outcome: the lease will expire and the job will be rescued; nothing more to do here. */
  #strand(error: unknown): void {
    this.#stranded = true;
    this.#logger.error({ err: error }, 'could not record the outcome; the job will be rescued when its lease expires');
  }

  /** Runs the handler; never rejects, whatever the handler throws or rejects with. */
  async #invoke(ctx: Parameters<AnyTask['handler']>[1]): Promise<Settled> {
    try {
      const payload = await validatePayload(this.task, this.job.payload).catch((error: unknown) => {
        throw error instanceof ValidationError ? new NonRetryableError(error.message, { cause: error }) : error;
      });
      return { ok: true, value: await this.task.handler(payload, ctx) };
    } catch (error) {
      return { ok: false, error };
    } finally {
      this.#settled = true;
    }
  }

  /** Waits for the handler up to `graceMs`; returns how it settled, or null. */
  async #waitSettled(handler: Promise<Settled>, graceMs: number): Promise<Settled | null> {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), graceMs);
      timer.unref(); // after a stop skipped to the release, a grace period must not hold the process
    });
    const outcome = await Promise.race([handler, grace, this.#handedBack]);
    clearTimeout(timer);
    if (outcome === null) {
      this.#logger.warn({ graceMs }, 'handler ignored its abort signal past the grace period; abandoning it (its later result is dropped)');
      void handler.then(() => this.#logger.info('abandoned handler settled; its outcome was dropped'));
    }
    return outcome;
  }

  /** Until when an outcome write may be retried: the lease's end, or the worker's stop deadline if sooner. */
  readonly #writeDeadline = () => Math.min(this.leaseExpiresAt, this.#deps.stopDeadline());

  /** Runs an outcome write, retrying through a database outage until {@link #writeDeadline}. */
  #persist<T>(op: string, write: () => Promise<T>): Promise<T> {
    return persist(write, { deadline: this.#writeDeadline, stopDeadline: this.#deps.stopDeadline, clock: this.#deps.clock, logger: this.#logger, op });
  }

  #written(ok: boolean, op: string): boolean {
    if (ok) return true;
    this.#holding = false;
    this.#logger.warn({ op }, 'write dropped: this run no longer holds the job (fencing token changed)');
    this.#outcome('lease_lost', ['baton.lease_lost', { 'baton.write': op }]);
    this.#deps.events.emit('write:dropped', { job: this.job, op });
    this.#deps.events.emit('lease:lost', { job: this.job });
    return false;
  }

  /**
   * `ctx.enqueueOnComplete`: checks the follow-up now and keeps it for the completion.
   * Refused once the handler settled: its completion may be on its way already.
   */
  #enqueueOnComplete(item: EnqueueItem): Promise<void> {
    if (this.#settled) {
      return Promise.reject(new ConflictError(`job ${this.job.id}: enqueueOnComplete after the handler returned or threw; call it (and await it) before the handler returns, or enqueue at once with ctx.enqueue`));
    }
    const prepared = this.#deps.client.prepare(item);
    this.#followUps.push(prepared.catch(() => undefined));
    const checked = prepared.then(() => undefined);
    checked.catch(() => undefined); // a refusal the handler does not await is not an unhandled rejection
    return checked;
  }

  async #complete(value: unknown, steps?: StepLog): Promise<void> {
    if (!this.#holding) return;
    const orphans = steps?.orphans() ?? [];
    if (orphans.length > 0) {
      this.#logger.warn({ steps: orphans }, 'stored steps this run never reached (renamed or removed since they ran?); their results are kept but unused');
      this.#span.event('baton.steps_orphaned', { 'baton.steps': orphans.join(', ') });
      this.#deps.events.emit('job:steps-orphaned', { job: this.job, steps: orphans });
      // In the job's timeline too; a failure to write it (the lease lost) is the completion's to find.
      await this.#deps.store.jobStepsOrphaned({ id: this.job.id, token: this.job.leaseToken, steps: orphans, now: this.#deps.clock.now() }).catch(() => undefined);
      if (!this.#holding) return;
    }
    let result: string;
    try {
      result = serializeJson(value === undefined ? null : value, 'result', this.#deps.payloadLimit);
    } catch (error) {
      return this.#fail(new NonRetryableError(`handler returned an invalid result: ${describeError(error)}`));
    }
    // Follow-ups still being checked (an enqueueOnComplete the handler did not await) are waited for; refused ones are left out.
    const enqueue = this.#followUps.length === 0 ? [] : (await Promise.all(this.#followUps)).filter((job) => job !== undefined);
    if (!this.#holding) return;
    const deps = this.#deps;
    this.#holding = false;
    const writing = deps.completer.complete({ id: this.job.id, token: this.job.leaseToken, result, ...(enqueue.length > 0 ? { enqueue } : {}) }, this.#writeDeadline);
    this.#freeSlot();
    const enqueued = await writing;
    if (!this.#written(enqueued !== null, 'jobComplete') || enqueued === null) return;
    if (enqueued.length > 0) deps.client.enqueued(enqueued);
    this.#logger.debug('job completed');
    this.#outcome('completed');
    deps.events.emit('job:completed', { job: this.job, result: JSON.parse(result) as Json, durationMs: deps.clock.now() - this.#startedAt, enqueued: enqueued.map((e) => e.job) });
  }

  async #fail(error: unknown): Promise<void> {
    if (!this.#holding) return;
    const deps = this.#deps;
    const now = deps.clock.now();
    const final = error instanceof NonRetryableError || this.job.attempt >= this.job.maxAttempts;
    const retryAt = final ? null : now + backoffDelay(this.task.backoff ?? DEFAULT_BACKOFF, this.job.attempt);
    const message = truncateText(describeError(error), STORED_TEXT_LIMITS.message);
    const stack = describeStack(error);
    const stored = { attempt: this.job.attempt, time: now, message, stack: stack === null ? null : truncateText(stack, STORED_TEXT_LIMITS.stack) };
    this.#holding = false;
    const written = await this.#persist('jobFail', () => deps.store.jobFail({ id: this.job.id, token: this.job.leaseToken, error: stored, retryAt, now }));
    if (!this.#written(written, 'jobFail')) return;
    this.#outcome(retryAt === null ? 'failed' : 'retry');
    this.#span.fail(error);
    if (retryAt !== null) this.#span.set({ 'baton.retry_at': new Date(retryAt).toISOString() });
    // The outcome line (observe/log-job-outcomes.ts) carries the message at warn; the stack is here, at debug.
    const text = retryAt === null ? 'job failed' : 'attempt failed; will retry';
    try {
      this.#logger.debug({ err: error, retryAt }, text);
    } catch {
      // pino's error serializer reads `message` and `stack`, which may be getters
      // that throw (C23): log the description instead, and still emit the event.
      this.#logger.debug({ err: { message, stack: stored.stack }, retryAt }, text);
    }
    deps.events.emit('job:failed', { job: this.job, error, message, retryAt: retryAt === null ? null : new Date(retryAt) });
  }

  async #cancelled(reason: CancelledError): Promise<void> {
    if (!this.#holding) return;
    const deps = this.#deps;
    this.#holding = false;
    const written = await this.#persist('jobFinishCancelled', () => deps.store.jobFinishCancelled({ id: this.job.id, token: this.job.leaseToken, now: deps.clock.now() }));
    if (!this.#written(written, 'jobFinishCancelled')) return;
    this.#logger.debug('job cancelled');
    this.#outcome('cancelled');
    deps.events.emit('job:cancelled', { job: this.job, reason: reason.reason });
  }

  /**
   * Hands the job back, attempt not counted, checkpoint kept: an aborted run at
   * shutdown keeps its runAt (due at once, in its place in line); a snooze is due
   * after its delay, placed as a job delayed to then. A cancel requested meanwhile ends it cancelled.
   */
  async #release(snooze?: SnoozeError): Promise<void> {
    if (!this.#holding) return;
    const deps = this.#deps;
    this.#holding = false;
    const now = deps.clock.now();
    const runAt = now + (snooze?.delayMs ?? 0);
    const lease = { id: this.job.id, token: this.job.leaseToken };
    const cause = snooze ? (snooze.code === 'rate_limited' ? 'rateLimited' : 'snooze') : 'shutdown';
    const released = await this.#persist('jobRelease', () => deps.store.jobRelease({ leases: [lease], now, cause, ...(snooze ? { runAt } : {}) }));
    if (!this.#written(released.length === 1, 'jobRelease')) return;
    if (snooze) {
      this.#outcome('snoozed', ['baton.snoozed', { 'baton.delay_ms': snooze.delayMs, 'baton.rate_limited': snooze.code === 'rate_limited' }]);
      this.#logger.debug({ delayMs: snooze.delayMs, reason: snooze.code }, 'job snoozed (attempt not counted, checkpoint kept)');
      deps.events.emit('job:snoozed', { job: this.job, delayMs: snooze.delayMs, runAt: new Date(runAt), rateLimited: snooze.code === 'rate_limited' });
    } else {
      this.#outcome('released', ['baton.released', { 'baton.abandoned': false }]);
      this.#logger.debug('job released for another worker (attempt not counted, checkpoint kept)');
      deps.events.emit('job:released', { job: this.job });
    }
  }
}

/** The span event of an abort: its name and attributes by reason; none for a lost lease (`leaseLost` marks it). */
function abortEvent(reason: CancelledError | ShutdownError | TimeoutError | LeaseLostError): Parameters<TraceSpan['event']> | undefined {
  if (reason instanceof CancelledError) return ['baton.cancel_requested', reason.reason === null ? {} : { 'baton.cancel.reason': reason.reason }];
  if (reason instanceof TimeoutError) return ['baton.timeout', { 'baton.timeout_ms': reason.timeoutMs }];
  if (reason instanceof ShutdownError) return ['baton.shutdown_requested'];
  return undefined;
}
