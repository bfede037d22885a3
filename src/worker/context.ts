import type { Logger } from 'pino';
import type { Client, EnqueueRest } from '../client/client.js';
import type { EnqueueItem } from '../client/enqueue.js';
import { LeaseLostError, SnoozeError, STORED_TEXT_LIMITS, truncateText, ValidationError } from '../errors.js';
import { serializeJson } from '../job/payload.js';
import type { AnyTask, InputOf, ResultOf } from '../job/task.js';
import type { ClaimedJob, EnqueueOptions, Json, Progress } from '../job/types.js';
import type { InsertedJob, NewJob } from '../store/store.js';
import type { StepFn, StepLog, StepOptions } from '../workflow/steps.js';
import type { ReceiveOptions, Waits } from '../workflow/waits.js';
import type { ChildFailurePolicy, ChildJob, ChildOptions, ChildOutcome, Children } from '../workflow/children.js';
import { forEach, type ForEachFn, type ForEachOptions, type ForEachResult } from './for-each.js';

/** The second argument of every handler. */
export interface JobContext {
  /** The job as claimed: id, attempt (1-based), payload, the last saved checkpoint… */
  readonly job: ClaimedJob;
  /**
   * Fires when the run must stop. `signal.reason` is a CancelledError, ShutdownError,
   * TimeoutError or LeaseLostError (`instanceof` them). Pass it to fetch, streams, sleep.
   */
  readonly signal: AbortSignal;
  /** The last saved checkpoint (from an earlier attempt too), null when none. */
  readonly checkpoint: Json;
  /**
   * Saves a checkpoint (JSON, within the payload limit), fenced by the lease: kept
   * across release, crash and retry.
   * @throws (rejects with) ValidationError for non-JSON; LeaseLostError when this run lost the job
   */
  saveCheckpoint(value: Json): Promise<void>;
  /**
   * Reports progress. Writes are throttled (at most one per `progressInterval` ms,
   * the last value always written); returns at once. A `message` over 1,024 characters
   * is stored cut to them (STORED_TEXT_LIMITS).
   */
  progress(current: number, total?: number, message?: string): void;
  /** pino logger bound to `{ component: 'job', workerId, jobId, attempt, task }`. */
  readonly logger: Logger;
  /** Graceful concurrent loop with resume; see {@link forEach}. */
  forEach<T>(items: readonly T[], fn: ForEachFn<T>, options?: ForEachOptions): Promise<ForEachResult>;
  /**
   * Puts the job back to `queued` for `ms` without counting the attempt, and ends this
   * run: it throws a {@link SnoozeError}, which the handler should let propagate (as
   * `throw new RateLimitedError(ms)` does). The checkpoint is kept; the job runs again,
   * on any worker, once `ms` has passed.
   * @param ms - 0..2147483647
   * @throws SnoozeError always; ValidationError when `ms` is not an integer in range
   */
  snooze(ms: number): never;
  /**
   * The client of this process: the Baton the worker was made by, as its {@link Client}
   * (enqueue, enqueueMany, cancel, retry, promote, getJob, getJobTimeline, followJob, listJobs,
   * queueCounts). No second `createBaton` is needed in a handler.
   */
  readonly baton: Client;
  /**
   * Enqueues one job now, as `baton.enqueue` does (the payload typed by the task):
   * written at once, whatever this run's outcome. An attempt that runs again (a retry,
   * a release, a rescue) enqueues again, unless the job carries a `key` held meanwhile.
   * To enqueue with this job's completion, all or nothing, use {@link enqueueOnComplete}.
   * @throws as `baton.enqueue`
   */
  enqueue: Client['enqueue'];
  /** Enqueues several jobs now, in one transaction, as `baton.enqueueMany` does. @throws as `baton.enqueueMany` */
  enqueueMany: Client['enqueueMany'];
  /**
   * Enqueues one job with this job's completion: checked now (payload against the
   * task's schema, options, size: a bad one rejects here and nothing is recorded), and
   * inserted in the same transaction as the fenced completion, only if that completion
   * is written (this run still holds the lease). So the follow-up exists exactly when
   * the job is `completed`: if the handler throws, times out, snoozes, is cancelled, is
   * released at shutdown or loses its lease, no follow-up is written, and the attempt
   * that later completes the job enqueues its own. Calls made before the handler
   * returns ride along in call order, in one transaction with the completion (and with
   * the other jobs of its batch); the `job:completed` event lists them (`enqueued`).
   * A `key` held by a queued or running job is not inserted (that job is listed
   * instead), as with `baton.enqueue`; a `delay` counts from this call.
   * @returns resolves once the job is checked (await it to see a refusal; an unawaited
   *   refusal adds nothing and never crashes the process)
   * @throws (rejects with) ValidationError, PayloadTooLargeError, NotFoundError as `baton.enqueue`
   *   (the `client` option is refused: the completion's transaction is used); ConflictError
   *   when called after the handler returned or threw
   */
  enqueueOnComplete<T extends AnyTask | string>(task: T, ...rest: EnqueueRest<T>): Promise<void>;
  /**
   * Runs `fn(signal)` as a durable step (issue 32; docs/durable-execution.md): at most
   * once to success per job, across attempts, hand-offs and crashes. Its JSON result
   * (within the payload limit) is stored, fenced by the lease, and returned without
   * running `fn` again on every later run. Identity: `name`, then `name#2`… for later
   * calls of one name in a run. The first step of a run loads the job's stored steps in
   * one query; each step run costs one statement.
   * @param name - 1..200 characters, no NUL, not starting with `baton:`
   * @throws (rejects with) ValidationError (name, options); NonRetryableError (a result
   *   that is not JSON or over the limit); LeaseLostError (the save was refused: this
   *   run lost the job, its signal is aborted); what `fn` threw on its last try (the
   *   attempt fails, with the job's retries; steps that succeeded are not run again)
   */
  step<T>(name: string, fn: StepFn<T>, options?: StepOptions): Promise<T>;
  /**
   * A durable sleep of `ms` from the first call (a replay does not restart it). Up to
   * LIVE_WAIT_MS (50 ms) it waits in the process; longer, the run suspends: the job is
   * handed back (attempt not counted, slot freed), `waiting` until then, and any worker
   * runs it again after that, its completed steps replayed. Let the WaitSuspension it
   * throws propagate.
   * @param ms - integer 0..315360000000 (10 years)
   * @throws ValidationError for a negative, fractional or NaN `ms`
   */
  sleep(ms: number): Promise<void>;
  /** {@link sleep} until `date` (a Date or ms since the epoch); at once when it has passed. @throws ValidationError for an invalid date */
  sleepUntil(date: Date | number): Promise<void>;
  /**
   * The next message sent to this job on `topic` (`baton.send`), delivered exactly once
   * (a step: a replay returns the same message). A message sent before this call is
   * kept and returned at once. Without one the run suspends until a message comes (the
   * send wakes the job in its transaction) or `timeout` passes, then returns null.
   * @param topic - 1..200 characters, no NUL
   * @throws ValidationError for a bad topic or options
   */
  receive<T = Json>(topic: string, options?: ReceiveOptions): Promise<T | null>;
  /**
   * Enqueues a child job of this one (workflow/children.ts): checked as an enqueue, and
   * idempotent per parent and step (a step `baton:child:<task>`): a replay returns the
   * same child and never enqueues twice. Its `result()` waits for it durably. Calls made
   * together (`Promise.all(items.map(…))`) are written in one transaction.
   * @param options - an enqueue's options but `key` and `client`, plus `onFailure`: `fail` (default: a
   *   failed or cancelled child fails this job, without retry) or `continue` (this job gets its outcome)
   * @throws ValidationError, PayloadTooLargeError, NotFoundError (as an enqueue); LeaseLostError
   */
  enqueueChild<T extends AnyTask | string>(task: T, payload?: T extends AnyTask ? InputOf<T> : unknown, options?: ChildOptions): Promise<ChildJob<T extends AnyTask ? ResultOf<T> : Json>>;
  /**
   * Waits, durably, until every child this job enqueued has ended: the run suspends
   * (slot freed, `waiting` for them) and is woken in the transaction that ends the last
   * one, or that fails one. A parent never waits on a child that has already ended.
   * @param options.onFailure - overrides each child's policy for this call
   * @returns each child's outcome, in enqueue order
   * @throws ChildFailedError (a child under policy `fail` failed or was cancelled: the job fails, no retry); ValidationError
   */
  waitForChildren(options?: { onFailure?: ChildFailurePolicy }): Promise<ChildOutcome[]>;
}

/** What a worker's handlers get of the client; `createBaton` makes it. */
export interface HandlerClient {
  /** `ctx.baton`. */
  readonly api: Client;
  /**
   * Checks and serializes a follow-up (`ctx.enqueueOnComplete`) as an enqueue does,
   * stamped with its trace context; nothing written.
   * @throws ValidationError, PayloadTooLargeError, NotFoundError
   */
  prepare(item: EnqueueItem): Promise<NewJob>;
  /** Follow-ups were written with their completion: announces those created (the client's `job:enqueued`). */
  enqueued(jobs: InsertedJob[]): void;
}

/** What a context needs from the run that owns it. */
export interface ContextHost {
  job: ClaimedJob;
  /** The handler's signal, made on first use (`ctx.signal`). */
  signal: () => AbortSignal;
  /** Made on first use. */
  logger: () => Logger;
  payloadLimit: number;
  progressInterval: number;
  /** Fenced writes: resolve false when the lease was lost. */
  writeCheckpoint(text: string, value: Json): Promise<boolean>;
  writeProgress(progress: Progress): Promise<boolean>;
  /** Called when a write finds the lease lost. */
  onLeaseLost(): void;
  /** `ctx.baton`. */
  client: Client;
  /** Records a follow-up for the completion (`ctx.enqueueOnComplete`); rejects when refused. */
  enqueueOnComplete(item: EnqueueItem): Promise<void>;
  /**
   * The run's step log, durable waits and children (`ctx.step`, `ctx.sleep`, `ctx.receive`,
   * `ctx.enqueueChild`): made on first use (most handlers use none).
   */
  workflow(): { steps: StepLog; waits: Waits; children: Children };
}

/** An already settled promise: where a run's chains of checkpoint and progress writes start. */
const SETTLED: Promise<unknown> = Promise.resolve();

/** `ctx.enqueue` and `ctx.enqueueMany` bound to their client, once per client (not once per run). */
const boundClients = new WeakMap<Client, Pick<Client, 'enqueue' | 'enqueueMany'>>();

function bound(client: Client): Pick<Client, 'enqueue' | 'enqueueMany'> {
  let methods = boundClients.get(client);
  if (!methods) boundClients.set(client, (methods = { enqueue: client.enqueue.bind(client), enqueueMany: client.enqueueMany.bind(client) }));
  return methods;
}

/** A run's throttled progress writes (`ctx.progress`): at most one per `progressInterval` ms, the last value always written. */
class ProgressWriter {
  readonly #host: ContextHost;
  #pending: Progress | undefined;
  #lastWrite = 0;
  #timer: NodeJS.Timeout | undefined;
  #writing = SETTLED;

  constructor(host: ContextHost) {
    this.#host = host;
  }

  /** Keeps `progress` as the value to write: now when the interval has passed since the last write, else at its end. */
  report(progress: Progress): void {
    this.#pending = progress;
    const wait = this.#host.progressInterval - (performance.now() - this.#lastWrite);
    if (wait <= 0) void this.write();
    else if (!this.#timer) {
      this.#timer = setTimeout(() => void this.write(), wait);
      this.#timer.unref();
    }
  }

  /** Writes the pending value, if any, after the writes before it; resolves when they are over (never rejects). */
  write(): Promise<unknown> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const progress = this.#pending;
    if (!progress) return this.#writing;
    this.#pending = undefined;
    this.#lastWrite = performance.now();
    const host = this.#host;
    this.#writing = this.#writing
      .then(() => host.writeProgress(progress))
      .then((held) => held || host.onLeaseLost())
      .catch((error: unknown) => host.logger().warn({ err: error }, 'progress write failed'));
    return this.#writing;
  }

  /** Drops the pending value and its timer (the run is over). */
  dispose(): void {
    clearTimeout(this.#timer);
    this.#pending = undefined;
  }
}

/**
 * The per-run context object, plus `flush()` for the executor to write the last
 * throttled progress before the outcome.
 *
 * Its functions are written as methods, not as arrow functions in properties: the
 * build (esbuild `keepNames`, as tsx does) wraps each named arrow in a `__name` call
 * that redefines its `name`, and per run that cost ~350 bytes of heap each
 * (docs/benchmarks.md, "Fewer objects per job"). None reads `this`: each works
 * destructured (`const { step } = ctx`).
 */
export function createContext(host: ContextHost): { ctx: JobContext; flush(): Promise<void>; dispose(): void } {
  let checkpoint: Json = host.job.checkpoint;
  let saving = SETTLED;
  let progressWriter: ProgressWriter | undefined;
  const { enqueue, enqueueMany } = bound(host.client);

  const ctx: JobContext = {
    job: host.job,
    get signal() {
      return host.signal();
    },
    get logger() {
      return host.logger();
    },
    get checkpoint() {
      return checkpoint;
    },
    saveCheckpoint(value: Json) {
      let text: string;
      try {
        text = serializeJson(value, 'checkpoint', host.payloadLimit);
      } catch (error) {
        return Promise.reject(error); // a promise-returning method rejects; it never throws synchronously
      }
      const save = saving.then(async () => {
        if (!(await host.writeCheckpoint(text, value))) {
          host.onLeaseLost();
          throw new LeaseLostError('checkpoint not saved: this run no longer holds the job');
        }
        checkpoint = JSON.parse(text) as Json;
      });
      saving = save.catch(() => undefined);
      return save;
    },
    progress(current: number, total?: number, message?: string) {
      const progress: Progress = { current };
      if (total !== undefined) progress.total = total;
      if (message !== undefined) progress.message = truncateText(String(message), STORED_TEXT_LIMITS.progressMessage);
      (progressWriter ??= new ProgressWriter(host)).report(progress);
    },
    forEach(items, fn, options) {
      return forEach(ctx, items, fn, options);
    },
    snooze(ms: number): never {
      throw new SnoozeError(ms);
    },
    baton: host.client,
    enqueue,
    enqueueMany,
    enqueueOnComplete(task: AnyTask | string, payload?: unknown, options?: EnqueueOptions) {
      if (options?.client !== undefined) {
        return Promise.reject(new ValidationError('invalid enqueue options', [{ path: ['client'], message: 'not accepted by enqueueOnComplete: the follow-up is written in the transaction of the job\'s completion' }], { subject: 'options' }));
      }
      return host.enqueueOnComplete({ task, payload, ...(options === undefined ? {} : { options }) });
    },
    async step(name, fn, options) {
      const { waits, steps } = host.workflow();
      waits.checkNotSuspended();
      return steps.run(name, fn, options);
    },
    sleep(ms) {
      return host.workflow().waits.sleep(ms);
    },
    sleepUntil(date) {
      return host.workflow().waits.sleepUntil(date);
    },
    receive(topic, options) {
      return host.workflow().waits.receive(topic, options);
    },
    enqueueChild(task: AnyTask | string, payload?: unknown, options?: ChildOptions) {
      return host.workflow().children.enqueue(task, payload, options);
    },
    waitForChildren(options) {
      return host.workflow().children.wait(options);
    },
  };
  return {
    ctx,
    async flush() {
      await progressWriter?.write();
      await saving;
    },
    dispose() {
      progressWriter?.dispose();
    },
  };
}
