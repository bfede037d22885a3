import type { Clock } from './clock.js';
import { cancel } from './client/cancel.js';
import { send } from './client/send.js';
import { releaseWaits, waitForResult } from './client/wait-result.js';
import { getJobSteps } from './client/steps.js';
import type { Client } from './client/client.js';
import type { ClientDeps } from './client/deps.js';
import { announceEnqueued, enqueueMany, prepareDeferred } from './client/enqueue.js';
import { followJob, JOB_WRITE_OPS } from './client/follow.js';
import { getJob, getJobTimeline, listJobs, queueCounts } from './client/query.js';
import { retry } from './client/retry.js';
import { promote } from './client/promote.js';
import { jobAdmin, type JobAdmin } from './client/bulk.js';
import { queueAdmin, type QueueAdmin } from './client/queues.js';
import { listWorkers, queueThroughput, type ThroughputPoint, type WorkerInfo } from './client/fleet.js';
import { readinessCheck, type Readiness } from './client/readiness.js';
import { unservedTaskWarning } from './client/unserved-task-warning.js';
import { resolveBatonOptions, type BatonOptions } from './config.js';
import { BatonError, ConfigError, StoreError, describeError } from './errors.js';
import type { AnyTask, Task } from './job/task.js';
import type { EnqueueOptions } from './job/types.js';
import type { ClientEvents } from './client/events.js';
import { TypedEmitter } from './observe/events.js';
import { createLogger, type Logger } from './observe/logger.js';
import { loadTracing } from './observe/tracing.js';
import { ClockSync } from './store/clock-sync.js';
import { instrumentStore, logLockWait, type StoreObserver } from './store/instrumented.js';
import { openStore, redact } from './store/open.js';
import type { Store, StoreOperation } from './store/store.js';
import { Worker } from './worker/worker.js';
import { declareQueues } from './flow/queue.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { serviceAdmin, type ServiceAdmin } from './lease/service-admin.js';
import { withLock, type LockContext, type LockOptions } from './lease/with-lock.js';
import { defineSchedule, scheduleAdmin, upsertSchedule, type ScheduleAdmin, type ScheduleInfo, type ScheduleOptions } from './schedule/schedule.js';
import type { WorkerOptions } from './worker/options.js';

/** The handle `createBaton` returns: client operations, workers, and close. */
export interface Baton extends Client {
  /** The instrumented store (internal; for tests and adapters). */
  readonly store: Store;
  readonly logger: Logger;
  /** The clock every part of this Baton takes `now` from: the option, else the database's time (Store.clock). */
  readonly clock: Clock;
  /** Completed and failed jobs per queue per minute over the last `minutes` (default 15), zeros filled in. */
  queueThroughput(minutes?: number): Promise<Map<string, ThroughputPoint[]>>;
  /** Live worker processes (any host) from the registry: those that heartbeat within their lease TTL. */
  listWorkers(): Promise<WorkerInfo[]>;
  /** The workers this Baton created in this process (started or not, not yet closed). */
  localWorkers(): Worker[];
  /**
   * Whether this process is ready for work (what `GET /readyz` answers): the database
   * answers within `timeoutMs` (default 2000), its schema is current, and every worker
   * this Baton created is running (not new, starting, stopping or stopped). A database
   * that fails or does not answer is a failed check, not an error.
   * @throws ConfigError for a timeoutMs that is not an integer in 1..2147483647 (the only rejection)
   */
  readiness(options?: { timeoutMs?: number }): Promise<Readiness>;
  /** Creates a worker (not started); `worker.start()` begins claiming. @throws ConfigError */
  worker(options: WorkerOptions): Worker;
  /**
   * Runs `fn` holding the named distributed lock (see LockOptions): renewed while fn
   * runs, fn's signal aborts if it is lost, released on return or throw.
   * @throws LockBusyError (held elsewhere; names holder and until when); LeaseLostError; fn's error
   */
  withLock<T>(name: string, options: LockOptions, fn: (lock: LockContext) => Promise<T>): Promise<T>;
  /**
   * Stores a recurring schedule (idempotent upsert: re-declaring it keeps its pending
   * next run unless the cadence changed). Ticked by workers with the scheduler on.
   * @throws ConfigError (invalid cron, time zone, option); ValidationError (payload)
   */
  schedule(name: string, options: ScheduleOptions): Promise<ScheduleInfo>;
  /** List, pause, resume, trigger and remove stored schedules. */
  readonly schedules: ScheduleAdmin;
  /** List, pause, resume and trigger services. */
  readonly services: ServiceAdmin;
  /** List queues with their counts and paused state; pause and resume a queue fleet-wide. */
  readonly queues: QueueAdmin;
  /** Delete a job; retry, cancel or purge many by filter, in batches, with a dry run. */
  readonly jobs: JobAdmin;
  /** Client events of this process (`job:enqueued`, `worker:created`). */
  on<K extends keyof ClientEvents>(event: K, listener: (payload: ClientEvents[K]) => void): () => void;
  /** Stops every worker it created (graceful), then closes the store. */
  close(): Promise<void>;
}

/**
 * Opens the database (running migrations) and returns the client and worker
 * factory. One per process is typical; every process sharing the database sees
 * the same jobs.
 * @throws ConfigError for bad options or an unsupported URL; StoreError when the database cannot be opened
 *   (a file that is not a database, unreadable…), does not answer (op `open`; the message names the URL
 *   that failed: the database URL, or the direct one for migrations and a read-only Baton behind PgBouncer)
 *   or, with `readOnly`, its schema lacks a migration. Nothing is created when the database URL does not answer.
 */
export async function createBaton(options: BatonOptions = {}, observer?: StoreObserver): Promise<Baton> {
  const o = resolveBatonOptions(options);
  const logger = options.logger ?? createLogger();
  const tracing = await loadTracing();
  const storeLogger = logger.child({ component: 'store' });
  const events = new TypedEmitter<ClientEvents>(() => logger);
  let raw: Store;
  try {
    raw = o.store ?? await openStore(o.database, {
      readOnly: o.readOnly,
      directUrl: o.directDatabase,
      // A ConfigError is a finding about the setup (a LISTEN URL that delivers no notification): its message says it all.
      onError: (error, where) =>
        error instanceof ConfigError ? logger.warn({ where }, error.message) : logger.warn({ err: error, where }, 'database connection lost; reconnecting'),
      onLockWait: (wait) => {
        logLockWait(storeLogger, wait);
        events.emit('store:lock-wait', wait);
      },
    });
  } catch (error) {
    if (error instanceof BatonError) throw error; // ConfigError: a bad URL, a driver not installed
    // The database refused (not a database, unreadable, missing for a reader): a store error, not a configuration one.
    throw new StoreError('open', error, `cannot open database ${redact(o.database)}: ${describeError(error)}`);
  }
  // This process's writes to jobs, for followJob (the store's change watch sees only other connections' commits).
  const localWrites = new Set<() => void>();
  const store = instrumentStore(raw, storeLogger, (op, ms, error) => {
    observer?.(op, ms, error);
    if (error === undefined && localWrites.size > 0 && JOB_WRITE_OPS.has(op as StoreOperation)) for (const listener of localWrites) listener();
  });
  // Time comes from the database (see Store.clock): on PostgreSQL this host's clock
  // plus its measured offset to the server's, re-measured every minute. A clock the
  // caller passes (tests) is used as given.
  const clockSync = options.clock ? undefined : new ClockSync({ store, logger: logger.child({ component: 'clock' }) });
  try {
    // The pool's first statement, before anything is created: a database URL that does not
    // answer (say a PgBouncer that is down, while the direct URL would migrate) fails here,
    // named, rather than in every loop of a worker forever.
    await clockSync?.first().catch((error: unknown) => {
      throw new StoreError('open', error, `cannot reach the database: ${describeError(error)}`);
    });
    if (o.readOnly || o.migrate) await (o.readOnly ? store.schemaCheck() : store.migrate());
    if (!o.readOnly) await declareQueues({ store, clock: options.clock ?? store.clock }, o.queues);
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  clockSync?.start();
  const clock = options.clock ?? store.clock;
  const deps: ClientDeps = {
    store, clock, events, tasks: new Map(o.tasks.map((t) => [t.name, t])), payloadLimit: o.payloadLimit, tracing,
    noteTaskByName: unservedTaskWarning({ store, clock, logger: logger.child({ component: 'client' }) }),
    onLocalWrite: (listener) => {
      const own = () => listener(); // one entry per subscription, even for the same function
      localWrites.add(own);
      return () => void localWrites.delete(own);
    },
  };
  const workers = new Set<Worker>();
  let closing: Promise<void> | undefined;

  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const scheduleDeps = { store, clock, payloadLimit: o.payloadLimit };

  const baton: Baton = {
    withLock: (name, options, fn) => withLock({ store, clock, logger: logger.child({ component: 'lock' }), owner }, name, options, fn),
    schedule: async (name, options) => (await upsertSchedule(scheduleDeps, defineSchedule(name, options))).schedule,
    schedules: scheduleAdmin(scheduleDeps),
    services: serviceAdmin({ store, clock, wake: () => workers.forEach((w) => w.wakeServices()) }),
    queues: queueAdmin(deps),
    jobs: jobAdmin(deps),
    store,
    logger,
    clock,
    enqueue: (async (task: AnyTask | string, payload?: unknown, options?: EnqueueOptions) => {
      const { client, ...rest } = options ?? {};
      const [job] = await enqueueMany(deps, [{ task, payload, options: rest }], { nameItems: false, ...(client ? { client } : {}) });
      return job;
    }) as Baton['enqueue'],
    enqueueMany: (items, options) => enqueueMany(deps, items, options?.client ? { client: options.client } : {}),
    cancel: (id, reason, options) => cancel(deps, id, reason ?? null, options),
    retry: (id, options) => retry(deps, id, options),
    promote: (id) => promote(deps, id),
    getJob: (id) => getJob(deps, id),
    getJobTimeline: (id) => getJobTimeline(deps, id),
    getJobSteps: (id) => getJobSteps(deps, id),
    followJob: (id, options) => followJob(deps, id, options),
    send: (target, topic, payload, options) => send(deps, target, topic, payload, options),
    waitForResult: (id, options) => waitForResult(deps, id, options),
    listJobs: (options) => listJobs(deps, options),
    queueCounts: (prefix) => queueCounts(deps, prefix),
    queueThroughput: (minutes) => queueThroughput(deps, minutes),
    listWorkers: () => listWorkers(deps),
    localWorkers: () => [...workers],
    readiness: readinessCheck({ store, workers: () => [...workers] }),
    worker(options) {
      const worker = new Worker(options, {
        store,
        clock,
        logger,
        payloadLimit: o.payloadLimit,
        tracing,
        queues: o.queues,
        // Handlers get this Baton as their client (ctx.baton), and their follow-ups are checked and announced as its enqueues are.
        client: { api: baton, prepare: (item) => prepareDeferred(deps, item), enqueued: (inserted) => announceEnqueued(deps, inserted) },
        // Jobs this process made claimable: new ones, a promoted one, a resumed queue, a batch of retries.
        onLocalEnqueue: (listener) => {
          const offs = [events.on('job:enqueued', listener), events.on('job:promoted', listener), events.on('queue:resumed', listener), events.on('jobs:retried', listener), events.on('job:message', listener)];
          return () => offs.forEach((off) => off());
        },
      });
      workers.add(worker);
      events.emit('worker:created', { worker });
      return worker;
    },
    on: (event, listener) => events.on(event, listener),
    close() {
      closing ??= (async () => {
        await Promise.all([...workers].map((w) => w.stop()));
        clockSync?.stop();
        await releaseWaits(store);
        await store.close();
      })();
      return closing;
    },
  };
  return baton;
}

export type { Task };
