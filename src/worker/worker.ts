import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { TypedEmitter } from '../observe/events.js';
import { logJobOutcomes } from '../observe/log-job-outcomes.js';
import type { Tracing } from '../observe/tracing.js';
import type { StopSummary, WorkerEvents } from './events.js';
import type { Store } from '../store/store.js';
import { ServiceRunner } from '../lease/service.js';
import { Scheduler } from '../schedule/scheduler.js';
import { upsertSchedule } from '../schedule/schedule.js';
import { applyCancelRequests } from '../cancellation/apply-cancel-requests.js';
import { pollCancelRequests } from '../cancellation/poll-cancel-requests.js';
import { Rescuer } from '../maintenance/rescuer.js';
import { Pruner } from '../maintenance/pruner.js';
import { TableVacuum } from '../maintenance/vacuum.js';
import { Completer } from './completer.js';
import { Suspender } from './suspender.js';
import type { HandlerClient } from './context.js';
import { fetchLoop } from './fetcher.js';
import type { ClaimLoop } from './claim-loop.js';
import { Reservations } from './slots.js';
import { RateWake } from './rate-wake.js';
import { WakeTimer } from './wake-timer.js';
import { heartbeat } from './heartbeat.js';
import { Loop, loopErrorReporter } from './loop.js';
import { registerWorker, unregisterWorker } from './registry.js';
import { resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerOptions } from './options.js';
import { settlesBy } from './persist.js';
import { countOutcomes, shutdown, stopDeadline } from './shutdown.js';
import { heldRuns, type WorkerState } from './state.js';
import { declareQueues, distinctQueues, type Queue } from '../flow/queue.js';
import { withQueueRetention } from '../maintenance/retention.js';

/** A worker's place in its lifecycle: see {@link Worker.status}. */
export type WorkerStatus = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** What `createBaton` hands a worker. */
export interface WorkerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  payloadLimit: number;
  /** Spans for runs, schedule ticks and service runs (observe/tracing.ts). */
  tracing: Tracing;
  /** Queues declared to `createBaton({ queues })`: their retention applies to this worker's pruner (which prunes for the whole fleet). @defaultValue [] */
  queues?: ReadonlyArray<Queue>;
  /** Subscribes to jobs enqueued by this process (instant local wake-up); returns unsubscribe. */
  onLocalEnqueue(listener: () => void): () => void;
  /** What handlers get of the client: `ctx.baton`, and the checks of `ctx.enqueueOnComplete`'s follow-ups. */
  client: HandlerClient;
}

/**
 * A worker: claims jobs of its tasks from its queues into `concurrency` slots (with
 * per-queue slots, each queue into its own, fetcher.ts) and runs them. Lifecycle:
 * ```
 * new ──start()──► running ──stop()──► stopping (drain → abort → release) ──► stopped
 * ```
 * Background loops: fetch (claims on wake-up, slot free, and every pollInterval),
 * heartbeat (one statement renews all leases), cancel poll (cancellation/), and the
 * rescuer of expired leases, the pruner of finished jobs and the table vacuum
 * (maintenance/; the pruner is a service, run by one worker of the fleet at a time).
 * Every loop's errors become `worker:error` events and logs; none can crash the process.
 */
export class Worker {
  readonly id: string;
  readonly options: ResolvedWorkerOptions;
  readonly #state: WorkerState;
  readonly #events: TypedEmitter<WorkerEvents>;
  readonly #deps: WorkerDeps;
  readonly #fetch: ClaimLoop;
  readonly #heartbeat: Loop;
  readonly #rateWake: RateWake;
  /** Wakes the claim loop at a rate window's opening or a suspended job's wake-up time. */
  readonly #wakeTimer: WakeTimer;
  readonly #cancels: Loop;
  readonly #rescuer: Rescuer;
  readonly #scheduler: Scheduler | undefined;
  readonly #services: ServiceRunner[];
  readonly #pruner: Pruner | undefined;
  readonly #vacuum: TableVacuum;
  /** The queues its tasks declare (defineTask's `queue: defineQueue(…)`): stored at start. */
  readonly #declared: Queue[];
  #unsubscribe: Array<() => void> = [];
  #started = false;
  /** Set once start() has started the loops: the worker claims. */
  #claiming = false;
  /** Set once stop() has finished. */
  #stopped = false;
  /** When start() was called (ms since the epoch), for the registry. */
  #startedAt = 0;
  /** A ref'd timer that keeps the process alive from start() until stop() has finished (every loop timer is unref'd). */
  #keepAlive: NodeJS.Timeout | undefined;
  #stopping: Promise<StopSummary> | undefined;
  /** start()'s work while it runs (never rejects): a stop() that comes meanwhile waits for it. */
  #starting: Promise<void> | undefined;
  #skip!: () => void;
  readonly #skipped = new Promise<void>((resolve) => (this.#skip = resolve));

  /** @throws ConfigError naming a bad option */
  constructor(options: WorkerOptions, deps: WorkerDeps) {
    this.options = resolveWorkerOptions(options);
    this.id = this.options.workerId;
    this.#deps = deps;
    // Sub-loggers bind their own component on `base`, not on `logger`: pino writes a child's
    // bindings after its parent's, and a second "component" key would make a duplicate JSON key.
    const base = (options.logger ?? deps.logger).child({ workerId: this.id });
    const logger = base.child({ component: 'worker' });
    const clock = options.clock ?? deps.clock;
    this.#events = new TypedEmitter<WorkerEvents>(() => logger);
    const o = this.options;
    logJobOutcomes(this.#events, base.child({ component: 'job' }), () => clock.now(), { completed: !o.quiet });
    this.#declared = distinctQueues(o.tasks.flatMap((t) => (t.queueDefinition ? [t.queueDefinition] : [])), 'worker option tasks');
    const known = distinctQueues([...this.#declared, ...(deps.queues ?? [])], 'worker option tasks and createBaton option queues');
    this.#state = {
      options: o,
      store: deps.store,
      clock,
      logger,
      events: this.#events,
      tasks: new Map(o.tasks.map((t) => [t.name, t])),
      runs: new Set(),
      reservations: new Reservations(),
      stopping: false,
      stopDeadline: Number.POSITIVE_INFINITY,
      executor: {
        store: deps.store,
        // A completion waits for the claim its freed slot causes, and is written with it,
        // unless that claim would queue behind one in flight: then it is written beside it.
        completer: new Completer(deps.store, clock, logger, () => {
          if (this.#state.stopping || !this.#claiming) return false;
          this.#wake();
          return this.#fetch.takesCompletions();
        }),
        suspender: new Suspender(deps.store, clock),
        clock,
        // Runs bind `component: 'job'` themselves; one component key per line.
        logger: base,
        events: this.#events,
        workerId: this.id,
        tracing: deps.tracing,
        client: deps.client,
        payloadLimit: deps.payloadLimit,
        progressInterval: o.progressInterval,
        abortGrace: o.abortGrace,
        cancelGrace: o.cancelGrace,
        stopDeadline: () => this.#state.stopDeadline,
      },
    };
    const onError = loopErrorReporter({ logger, events: this.#events, workerId: this.id, stopped: () => this.#stopped });
    this.#wakeTimer = new WakeTimer(clock, this.#wake);
    this.#rateWake = new RateWake({ store: deps.store, clock, queues: o.queues, timer: this.#wakeTimer });
    // A job this worker suspended (ctx.sleep, a receive's timeout) is claimed when due, not at the next poll.
    this.#events.on('job:waiting', ({ wait }) => this.#wakeTimer.armAt(wait.until.getTime()));
    this.#fetch = fetchLoop(this.#state, { wake: this.#wake, afterShortClaim: () => this.#rateWake.afterShortClaim(), onError });
    // Each heartbeat tick renews the leases first, then refreshes the registry row.
    this.#heartbeat = new Loop('heartbeat', o.heartbeatInterval, async () => {
      try {
        await heartbeat(this.#state);
      } finally {
        if (!this.#state.stopping || this.#state.runs.size > 0) await registerWorker(this.#state, this.#startedAt);
      }
      // A rate set or cleared by another process is known here within a heartbeat.
      if (!this.#state.stopping) await this.#rateWake.refresh();
    }, onError);
    this.#cancels = new Loop('cancel-poll', o.cancelPollInterval, async () => void (await pollCancelRequests(deps.store, heldRuns(this.#state))), onError);
    this.#rescuer = new Rescuer({
      store: deps.store,
      clock,
      logger,
      intervalMs: o.rescueInterval,
      // Claim what was requeued now: on SQLite this worker's change watch does not
      // see its own commit (PostgreSQL's NOTIFY would wake it anyway; one more claim is harmless).
      onRescued: (report) => {
        if (report.requeued.length > 0) this.#wake();
      },
      onError,
    });
    let schedulerFailures = 0;
    this.#scheduler = o.scheduler
      ? new Scheduler({ store: deps.store, clock, logger, events: this.#events, workerId: this.id, tracing: deps.tracing, onError: (error) => onError('scheduler', error, ++schedulerFailures) })
      : undefined;
    // Ticks this worker enqueued are not seen by its own change watch: claim them now.
    this.#events.on('schedule:enqueued', () => this.#wake());
    this.#pruner = o.retention === false
      ? undefined
      : new Pruner({ store: deps.store, clock, logger: base.child({ component: 'pruner' }), events: this.#events, options: withQueueRetention(o.retention, known), tasks: o.tasks });
    this.#vacuum = new TableVacuum({ store: deps.store, logger: base.child({ component: 'vacuum' }), events: this.#events, onError });
    this.#services = [...o.services, ...(this.#pruner ? [this.#pruner.service()] : [])].map((service) => {
      let failures = 0;
      return new ServiceRunner(service, {
        store: deps.store,
        clock,
        logger: logger.child({ service: service.name }),
        events: this.#events,
        owner: this.id,
        tracing: deps.tracing,
        onError: (error) => onError(`service:${service.name}`, error, ++failures),
      });
    });
  }

  #wakeScheduled = false;
  /** Claims soon (next turn: slots freed in one batch fill one claim); only once started, not from a hand-driven loop's pass. */
  readonly #wake = () => {
    if (this.#wakeScheduled || !this.#claiming) return;
    this.#wakeScheduled = true;
    setImmediate(() => {
      this.#wakeScheduled = false;
      void this.#fetch.runOnce();
    });
  };

  /** Adds an event listener; returns a function that removes it. See {@link WorkerEvents}. */
  on<K extends keyof WorkerEvents>(event: K, listener: (payload: WorkerEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }

  once<K extends keyof WorkerEvents>(event: K, listener: (payload: WorkerEvents[K]) => void): () => void {
    return this.#events.once(event, listener);
  }

  /**
   * Where the worker is in its lifecycle (see the diagram above): 'new' until
   * start(); 'starting' while start() stores the schedules and registers; 'running'
   * once its loops claim; 'stopping' from the moment stop() is called (it claims
   * nothing more while it drains and releases); 'stopped' once stop() has resolved.
   */
  get status(): WorkerStatus {
    if (this.#state.stopping) return this.#stopped ? 'stopped' : 'stopping';
    return this.#claiming ? 'running' : this.#started ? 'starting' : 'new';
  }

  /** Jobs this worker holds now: running, finishing, or claimed ahead and waiting for a slot (`prefetch`). */
  get running(): number {
    return this.#state.runs.size;
  }

  /**
   * Stores the queues its tasks declare and the declared schedules (idempotent
   * upserts), starts the loops, the
   * scheduler and the services, and claims at once. Calling it twice is harmless. A
   * worker whose stop() was called before, or while this ran up to its loops, never
   * claims: start() then resolves without starting them.
   * @throws ValidationError when a declared schedule's payload fails its task's schema; StoreError
   */
  async start(): Promise<void> {
    if (this.#started || this.#stopping) return;
    this.#started = true;
    const starting = this.#start();
    this.#starting = starting.catch(() => undefined);
    await starting;
  }

  async #start(): Promise<void> {
    try {
      await declareQueues(this.#state, this.#declared);
      for (const schedule of this.options.schedules) {
        await upsertSchedule({ store: this.#state.store, clock: this.#state.clock, payloadLimit: this.#deps.payloadLimit }, schedule);
      }
    } catch (error) {
      this.#started = false;
      throw error;
    }
    this.#startedAt = this.#state.clock.now();
    try {
      await registerWorker(this.#state, this.#startedAt);
    } catch (error) {
      this.#state.logger.warn({ err: error }, 'could not register the worker; the heartbeat will try again');
    }
    // stop() came while this ran (a signal during start-up): it waits for this, then
    // stops a worker that never claimed.
    if (this.#stopping) return;
    this.#keepAlive = setInterval(() => undefined, 2_147_483_647);
    for (const loop of [this.#fetch, this.#heartbeat, this.#cancels, this.#rescuer]) loop.start();
    this.#scheduler?.start();
    for (const runner of this.#services) runner.start();
    this.#unsubscribe.push(this.#deps.onLocalEnqueue(this.#wake));
    this.#unsubscribe.push(
      this.#state.store.watchChanges({
        intervalMs: this.options.watchInterval,
        listener: (change) => {
          if (change?.finished) return; // jobs ended elsewhere: nothing to claim or abort here
          if (change?.cancel) {
            // A pushed cancel request names the job: abort it without another read.
            applyCancelRequests(heldRuns(this.#state), [change.cancel]);
            return;
          }
          this.#wake();
          void this.#cancels.runOnce();
        },
      }),
    );
    this.#claiming = true;
    this.#events.emit('worker:started', { workerId: this.id });
    this.#state.logger.info({ concurrency: this.options.concurrency, prefetch: this.options.prefetch, queues: this.options.queues, tasks: [...this.#state.tasks.keys()] }, 'worker started');
    await this.#rescuer.tick();
    await this.#vacuum.start();
    await this.#fetch.runOnce();
  }

  /**
   * Graceful shutdown (SPEC): stop claiming, drain up to `drainTimeout`, abort the
   * rest with ShutdownError and wait `abortGrace`, release what is left (attempt not
   * counted, checkpoint kept), stop every loop. Resolves with a summary; never rejects.
   * Calling it again returns the same promise; with `{ now: true }` (a second
   * signal) it skips straight to the release. With the database unreachable, writes
   * about jobs give up at drainTimeout + abortGrace + `RELEASE_BUDGET_MS` (2 s) after
   * the stop began; the summary's `unreleased` names those jobs (taken over when
   * their lease expires). It resolves once no write about a job is pending, so the
   * store can be closed right after.
   */
  stop(options: { now?: boolean } = {}): Promise<StopSummary> {
    if (options.now) this.#skip();
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<StopSummary> {
    const outcomes = countOutcomes(this.#state); // the summary counts what ends from the moment stop() begins
    // Not between start()'s store writes and its loops: those would start after the stop.
    if (this.#started && !this.#claiming) await this.#starting;
    const state = this.#state;
    state.stopping = true;
    const startedAt = state.clock.now();
    state.stopDeadline = stopDeadline(state, startedAt);
    const waiting = [...state.runs].filter((run) => !run.started).length;
    const counts = { running: state.runs.size - waiting, waiting };
    this.#events.emit('worker:stopping', { workerId: this.id, ...counts });
    state.logger.info(counts, waiting > 0 ? 'worker stopping: draining running jobs, handing back those claimed ahead' : 'worker stopping: draining running jobs');
    for (const off of this.#unsubscribe) off();
    // Services are aborted at once (ShutdownError) and their leases released, so
    // another instance takes over without waiting for a lease to expire.
    const servicesStopped = Promise.all(this.#services.map((runner) => runner.stop(this.options.abortGrace)));
    // The loops stop together. A pass still in flight (a claim, a rescue, a tick) is waited
    // for until the drain's end at most: on a store that cannot answer (another process
    // holding SQLite's write lock) it could take the store's whole lock budget.
    const claimsEnded = this.#fetch.stop();
    const loopsStopped = Promise.all([this.#scheduler?.stop(), claimsEnded, this.#rescuer.stop(), this.#vacuum.stop()]);
    await Promise.race([settlesBy(loopsStopped, startedAt + this.options.drainTimeout, state.clock), this.#skipped]);
    // No claim will take the completions still to come: the completer writes them itself.
    state.executor.completer.detach();
    this.#wakeTimer.stop();
    let summary: StopSummary;
    try {
      summary = await shutdown(state, this.#skipped, claimsEnded, startedAt, outcomes.summary);
    } catch (error) {
      state.logger.error({ err: error }, 'releasing jobs at shutdown failed; their leases will expire and they will be rescued');
      const left = [...state.runs];
      summary = { ...outcomes.summary, abandoned: left.filter((r) => !r.settled).length, unreleased: left.map((r) => r.job.id).sort((a, b) => a - b) };
    }
    outcomes.off();
    // What is left waits on the store by the stop deadline at most, then is abandoned.
    const byDeadline = (work: Promise<unknown>) => settlesBy(work, state.stopDeadline, state.clock);
    await byDeadline(Promise.all([servicesStopped, this.#heartbeat.stop(), this.#cancels.stop(), loopsStopped]));
    const unregistered = unregisterWorker(state).then(() => undefined, (error: unknown) => error ?? 'failed');
    const failure = (await byDeadline(unregistered)) ? await unregistered : 'the store did not answer by the stop deadline';
    if (failure !== undefined) state.logger.warn({ err: failure }, 'could not remove the worker from the registry; its row expires by itself');
    state.logger.info(summary, 'worker stopped');
    this.#stopped = true;
    this.#events.emit('worker:stopped', { workerId: this.id, summary });
    clearInterval(this.#keepAlive);
    return summary;
  }

  /** Makes this worker's services look at their rows now (after a trigger or resume). */
  wakeServices(): void {
    for (const runner of this.#services) runner.wake();
  }

  /** Test hooks: run one pass of a background loop now. */
  readonly loops = {
    /** One scheduler pass at `now` (default: the clock); returns the earliest next run. Works whether or not the scheduler is on. */
    scheduler: (now?: number) =>
      (this.#scheduler ?? new Scheduler({ store: this.#state.store, clock: this.#state.clock, logger: this.#state.logger, events: this.#events, workerId: this.id, tracing: this.#deps.tracing, onError: () => undefined })).runOnce(now),
    /** One pass of the named service's runner; returns the ms it would sleep. */
    service: (name: string) => {
      const runner = this.#services.find((r) => r.service.name === name);
      if (!runner) throw new Error(`this worker runs no service "${name}"`);
      return runner.runOnce();
    },
    fetch: () => this.#fetch.runOnce(),
    heartbeat: () => this.#heartbeat.runOnce(),
    cancelPoll: () => this.#cancels.runOnce(),
    /** One rescue pass at `now` (default: the clock); returns what it settled. @throws StoreError */
    rescue: (now?: number) => this.#rescuer.runOnce(now),
    /** One check of the jobs table's dead rows, vacuuming past the threshold (maintenance/vacuum.ts). @throws StoreError */
    vacuum: () => this.#vacuum.runOnce(),
    /**
     * One pruning pass at `now` (default: the clock), outside the service's lease;
     * returns what it deleted. @throws Error when this worker has `retention: false`; StoreError
     */
    prune: (now?: number) => {
      if (!this.#pruner) throw new Error('this worker has retention: false and runs no pruner');
      return this.#pruner.runOnce(now);
    },
  };
}
