import type { Logger } from 'pino';
import { CancelledError, LeaseLostError, NonRetryableError, ShutdownError, SnoozeError, TimeoutError, ValidationError } from '../errors.js';
import { validatePayload, type AnyTask } from '../job/task.js';
import type { ClaimedJob, JobWait } from '../job/types.js';
import type { StepLog } from '../workflow/steps.js';
import type { TraceSpan } from '../observe/tracing.js';
import { createContext } from './context.js';
import type { ExecutorDeps } from './run-deps.js';
import { abortEvent, RunAbort, type AbortReason } from './run-abort.js';
import { RunOutcome, type RunHost } from './run-outcome.js';
import { runWorkflow } from './run-workflow.js';

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
export class JobRun implements RunHost {
  readonly job: ClaimedJob;
  readonly task: AnyTask;
  /** Resolves when this run no longer needs its concurrency slot. */
  readonly slotFreed: Promise<void>;
  /** Resolves when the run is over, its outcome written (or given up). */
  readonly done: Promise<void>;
  #resolveSlot!: () => void;
  #slotFree = false;
  readonly #deps: ExecutorDeps;
  /** The abort reason, the handler's signal (made on first use) and the run's one waiter. */
  readonly #abort = new RunAbort();
  #jobLogger: Logger | undefined;
  #startedAt: number;
  /** False while the run waits for a slot (claimed ahead); see {@link start}. */
  #started: boolean;
  /** Wakes a waiting run at {@link start}. */
  #begin: (() => void) | undefined;
  /** The run's writes about its job, and whether it still holds the lease (`holding`). */
  readonly #record: RunOutcome;
  /** The handler's promise settled (an abandoned handler never does). */
  #settled = false;
  /** The outcome write gave up (database unreachable): the job stays running in the database until its lease expires. */
  #stranded = false;
  /** `done` resolved: no write of this run is pending. */
  #over = false;
  /** The shutdown took the job back (relinquish): an aborted handler is waited for no longer. */
  #relinquished = false;
  /** Ends a grace period's wait at {@link relinquish}. */
  #onRelinquish: (() => void) | undefined;
  #timeout: NodeJS.Timeout | undefined;
  readonly #span: TraceSpan;
  /** The shutdown took the job back ({@link relinquish}): {@link handedBack} ends the span once the release is written. */
  #awaitingRelease = false;
  /** When the lease runs out unless renewed (ms since the epoch); the heartbeat moves it. */
  leaseExpiresAt: number;

  /** @param waiting - claimed ahead of a free slot: the handler starts at {@link start}, not now */
  constructor(job: ClaimedJob, task: AnyTask, deps: ExecutorDeps, waiting = false) {
    this.job = job;
    this.task = task;
    this.#deps = deps;
    this.#started = !waiting;
    this.#startedAt = deps.clock.now();
    this.#span = deps.tracing.run(job, deps.workerId);
    this.#record = new RunOutcome(job, task, deps, this.#span, this);
    this.leaseExpiresAt = job.leaseExpiresAt?.getTime() ?? this.#startedAt;
    this.slotFreed = new Promise((resolve) => (this.#resolveSlot = resolve));
    this.done = this.#run();
  }

  /** The run's logger, bound to job id, attempt and task; made on first use (most runs never log). For RunOutcome ({@link RunHost}). */
  get logger(): Logger {
    return (this.#jobLogger ??= this.#deps.logger.child({ component: 'job', jobId: this.job.id, attempt: this.job.attempt, task: this.job.task }));
  }

  /** Whether the run's logger writes lines at `level`, without making it. For RunOutcome ({@link RunHost}). */
  logs(level: 'debug'): boolean {
    return (this.#jobLogger ?? this.#deps.logger).isLevelEnabled(level);
  }

  /** When the handler began (ms since the epoch, by the worker's clock); the claim's time until then. */
  get startedAt(): number {
    return this.#startedAt;
  }

  /** Frees the run's concurrency slot (`slotFreed` resolves); later calls do nothing. For RunOutcome ({@link RunHost}). */
  freeSlot(): void {
    if (this.#slotFree) return;
    this.#slotFree = true;
    this.#resolveSlot();
  }

  /** False while the run waits for a slot (claimed ahead, handler not started). */
  get started(): boolean {
    return this.#started;
  }

  /**
   * Starts the handler of a waiting run (a slot is free for it); not one whose lease has
   * run out ({@link leaseRunOut}: another worker may already have taken the job).
   * A run already aborted (a cancel, the shutdown, a lost lease: its end is on the way
   * in a microtask) is not started either, so it takes no slot it will not use.
   * @returns whether it started now (false: it had started, ended, been aborted, or its lease ran out)
   */
  start(): boolean {
    if (this.#started || !this.#record.holding || this.#abort.reason !== undefined || this.leaseRunOut()) return false;
    this.#started = true;
    this.#startedAt = this.#deps.clock.now();
    this.#begin?.();
    return true;
  }

  /** True while the run holds the lease and its outcome is not yet recorded. */
  get holding(): boolean {
    return this.#record.holding;
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
    return this.#abort.reason !== undefined;
  }

  /**
   * Aborts the handler's signal with `reason` (first reason wins), logged and emitted
   * as `job:aborted`. A waiting run (not started) is ended instead, with neither: no
   * handler ran, and its outcome (`job:cancelled`, `job:released`, `lease:lost`) is
   * the one report of its end.
   */
  abort(reason: AbortReason): void {
    if (this.#abort.reason !== undefined || this.#settled) return;
    const event = abortEvent(reason);
    if (event) this.#span.event(...event);
    if (this.#started) this.logger.debug({ reason: reason.code }, 'aborting job');
    this.#abort.abort(reason);
    if (this.#started) this.#deps.events.emit('job:aborted', { job: this.job, reason });
  }

  /** True, and the lease counted lost ({@link leaseLost}), once it ran out by the worker's clock (no heartbeat renewed it: frozen, or the database away). */
  leaseRunOut(): boolean {
    if (this.leaseExpiresAt > this.#deps.clock.now()) return false;
    this.leaseLost();
    return true;
  }

  /** The lease was found lost (heartbeat or a refused write): stop holding, abort the handler. */
  leaseLost(): void {
    if (!this.#record.holding) return;
    this.#record.holding = false;
    this.logger.warn('lease lost: another worker took the job over; this run stops and its writes are dropped');
    this.#record.outcome('lease_lost', ['baton.lease_lost']);
    this.#deps.events.emit('lease:lost', { job: this.job });
    this.abort(new LeaseLostError());
  }

  /**
   * Hands the job back (shutdown step 4) if still held; returns true when it was
   * held. The run no longer waits for an aborted handler: it has nothing left to write.
   */
  relinquish(): boolean {
    const held = this.#record.holding;
    this.#record.holding = false;
    this.#awaitingRelease ||= held;
    this.#relinquished = true;
    this.#onRelinquish?.();
    return held;
  }

  /**
   * The shutdown's release of a job it took back ({@link relinquish}) is over:
   * `released` when written, false when it gave up. Ends the run's span.
   */
  handedBack(released: boolean): void {
    this.#record.outcome(released ? 'released' : 'unreleased', released ? ['baton.released', { 'baton.abandoned': !this.#settled }] : undefined);
    this.#span.end();
  }

  /** The run, then its end: `done` resolves after this. */
  async #run(): Promise<void> {
    try {
      await this.#execute();
    } finally {
      this.#over = true;
      this.freeSlot();
      // Still held (a handler the shutdown abandoned) or taken back: the shutdown's release ends it.
      if (!this.#record.holding && !this.#awaitingRelease) this.#span.end();
    }
  }

  async #execute(): Promise<void> {
    const { job } = this;
    const deps = this.#deps;
    if (!this.#started) {
      // Claimed ahead: until a slot frees (start) or the run is aborted, whichever comes first.
      const reason = await this.#abort.until<undefined>((resolve) => (this.#begin = () => resolve(undefined)));
      if (reason !== undefined) return this.#endWaiting(reason);
    }
    deps.events.emit('job:started', { job });
    // The step log, waits and children of the run, made when the handler first uses one.
    let workflow: ReturnType<typeof runWorkflow> | undefined;
    // Methods, not arrow properties: no `__name` wrapper per run (see createContext).
    const run = this;
    const { ctx, flush, dispose } = createContext({
      workflow() {
        return (workflow ??= runWorkflow(run.#abort.signal, deps, run.#span, run.#record, () => run.#settled, () => run.leaseRunOut()));
      },
      job,
      signal() {
        return run.#abort.signal;
      },
      logger() {
        return run.logger;
      },
      payloadLimit: deps.payloadLimit,
      progressInterval: deps.progressInterval,
      async writeCheckpoint(text, value) {
        if (!run.#record.holding) return false;
        // Retried through a database outage, as outcomes are: a blip must not fail the attempt.
        const held = await run.#record.persist('jobCheckpoint', () => deps.store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: text }));
        if (held) {
          run.#span.event('baton.checkpoint');
          deps.events.emit('job:checkpoint', { job, checkpoint: value });
        }
        return held;
      },
      async writeProgress(progress) {
        if (!run.#record.holding) return true;
        const held = await deps.store.jobProgress({ id: job.id, token: job.leaseToken, progress });
        if (held) deps.events.emit('job:progress', { job, progress });
        return held;
      },
      onLeaseLost() {
        run.leaseLost();
      },
      client: deps.client.api,
      enqueueOnComplete(item) {
        return run.#record.enqueueOnComplete(item);
      },
    });

    if (job.timeoutMs !== null) {
      this.#timeout = setTimeout(() => this.abort(new TimeoutError(job.timeoutMs!)), job.timeoutMs);
      this.#timeout.unref(); // the worker keeps the process alive while it runs; an abandoned run must not
    }
    const handler = this.#span.within(() => this.#invoke(ctx));

    // The handler's end or the run's abort, whichever comes first.
    const first = await this.#abort.until<Settled>((resolve) => void handler.then(resolve));
    try {
      if (!(first instanceof Error) && this.#abort.reason === undefined) {
        await flush().catch(() => undefined);
        if (workflow?.waits.suspension) await this.#suspend(workflow.steps, workflow.waits.suspension.wait);
        else if (first.ok) await this.#record.complete(first.value, workflow?.steps);
        else if (first.error instanceof SnoozeError) await this.#record.release(first.error);
        else await this.#record.fail(first.error);
        return;
      }
      const reason = first instanceof Error ? first : this.#abort.reason!;
      // The last throttled progress is written before the outcome (writes are fenced:
      // after the outcome they would be refused).
      const flushed = () => flush().catch(() => undefined);
      if (reason instanceof TimeoutError) {
        await flushed();
        await this.#record.fail(reason);
        await this.#waitSettled(handler, deps.abortGrace);
      } else if (reason instanceof CancelledError) {
        await this.#waitSettled(handler, deps.cancelGrace);
        await flushed();
        await this.#record.cancelled(reason);
      } else if (reason instanceof ShutdownError) {
        const settled = await this.#waitSettled(handler, deps.abortGrace);
        await flushed();
        if (settled && workflow?.waits.suspension) await this.#suspend(workflow.steps, workflow.waits.suspension.wait);
        else if (settled?.ok) await this.#record.complete(settled.value, workflow?.steps);
        else if (settled) await this.#record.release();
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

  /** Suspends on `wait` once no step runs beside it (a step started with the wait still saves its result: it never runs twice). */
  async #suspend(steps: StepLog, wait: JobWait): Promise<void> {
    await steps.idle();
    await this.#record.suspend(wait);
  }

  /** A waiting run aborted before its start: no handler ran, so nothing is abandoned. */
  async #endWaiting(reason: Error): Promise<void> {
    this.#settled = true;
    try {
      if (reason instanceof CancelledError) await this.#record.cancelled(reason);
      else if (reason instanceof ShutdownError) await this.#record.release();
      // LeaseLostError: another worker holds the job; nothing to write.
    } catch (error) {
      this.#strand(error);
    }
  }

  /** A store failure while recording the outcome: the lease will expire and the job will be rescued; nothing more to do here. */
  #strand(error: unknown): void {
    this.#stranded = true;
    this.logger.error({ err: error }, 'could not record the outcome; the job will be rescued when its lease expires');
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
    const handedBack = this.#relinquished ? Promise.resolve(null) : new Promise<null>((resolve) => (this.#onRelinquish = () => resolve(null)));
    const outcome = await Promise.race([handler, grace, handedBack]);
    clearTimeout(timer);
    if (outcome === null) {
      this.logger.warn({ graceMs }, 'handler ignored its abort signal past the grace period; abandoning it (its later result is dropped)');
      void handler.then(() => this.logger.info('abandoned handler settled; its outcome was dropped'));
    }
    return outcome;
  }
}
