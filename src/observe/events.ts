import type { Logger } from 'pino';
import type { ClaimedJob, Job, Progress } from '../job/types.js';
import type { Worker } from '../worker/worker.js';

/** Summary `worker.stop()` resolves with. Counts are jobs. */
export interface StopSummary {
  /** Jobs that reached an outcome (completed, failed, cancelled, retry) during the stop. */
  finished: number;
  /** Jobs released back to `queued` (attempt not counted, checkpoint kept). */
  released: number;
  /** Handlers that never settled and were left behind; their late writes are dropped. */
  abandoned: number;
}

/**
 * Worker lifecycle events and their payloads (names `noun:verb`).
 * Listeners run synchronously; a listener that throws is logged and never
 * crashes the worker (see {@link TypedEmitter.emit}).
 */
export interface WorkerEvents {
  'worker:started': { workerId: string };
  /** `stop()` was called (or SIGTERM/SIGINT under the CLI). */
  'worker:stopping': { workerId: string; running: number };
  'worker:stopped': { workerId: string; summary: StopSummary };
  /** A background loop (fetch, heartbeat, cancel poll) hit an error; it keeps going. */
  'worker:error': { workerId: string; loop: string; error: unknown };
  'job:claimed': { job: ClaimedJob };
  'job:progress': { job: ClaimedJob; progress: Progress };
  'job:checkpoint': { job: ClaimedJob; checkpoint: unknown };
  /** `durationMs`: claim to completion. */
  'job:completed': { job: ClaimedJob; result: unknown; durationMs: number };
  /** `retryAt` is null when the job is now `failed` for good. */
  'job:failed': { job: ClaimedJob; error: unknown; message: string; retryAt: Date | null };
  'job:cancelled': { job: ClaimedJob; reason: string | null };
  /**
   * Released by shutdown: back to queued, attempt not counted. `abandoned`: its
   * handler had not returned and was left behind (it counts in the stop summary's
   * `abandoned` too); its late writes are dropped.
   */
  'job:released': { job: ClaimedJob; abandoned?: boolean };
  /** The handler's signal fired; `reason` is one of the four abort errors. */
  'job:aborted': { job: ClaimedJob; reason: Error };
  /** The worker's lease on the job was taken over; its later writes are dropped. */
  'lease:lost': { job: ClaimedJob };
  /** A write of a run that no longer owns the job was refused by the fencing token. */
  'write:dropped': { job: ClaimedJob; op: string };
  /** This worker won a schedule's compare-and-set and enqueued these ticks' jobs (one per tick, oldest first). */
  'schedule:enqueued': { schedule: string; jobs: Job[]; scheduledFor: Date[] };
  /**
   * This worker found the schedule due but another instance advanced it first (the
   * compare-and-set failed): nothing was enqueued by this worker for `scheduledFor`.
   */
  'schedule:skipped': { schedule: string; scheduledFor: Date[] };
  /** Ticks missed during downtime and not enqueued (catchUp none/latest, or beyond catchUpLimit). */
  'schedule:missed': { schedule: string; missed: number; from: Date; to: Date };
  /** This worker holds the service's lease and starts a run. */
  'service:started': { service: string; fencingToken: number; lastRunAt: Date | null };
  /** A run returned; its outcome is stored. `nextRunAt` null: not again until triggered. */
  'service:completed': { service: string; fencingToken: number; nextRunAt: Date | null; durationMs: number };
  /** A run threw; stored as the last error, retried at `retryAt`. */
  'service:failed': { service: string; fencingToken: number; error: unknown; message: string; retryAt: Date };
  /** A run's signal fired (LeaseLostError, ShutdownError): its outcome is not stored. */
  'service:aborted': { service: string; fencingToken: number; reason: Error };
}

/** Client events, emitted by `createBaton()`'s client in this process. */
export interface ClientEvents {
  'job:enqueued': { job: Job };
  /** `baton.worker()` made a worker (not started yet): lets metrics subscribe to its events. */
  'worker:created': { worker: Worker };
}

type Listener<T> = (payload: T) => void;

/**
 * A small typed event emitter. Unlike Node's EventEmitter it has no special
 * `'error'` event, and a listener that throws is logged and skipped
 * (graphile-worker's "safeEmit"), so no event can crash a worker.
 */
export class TypedEmitter<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<Listener<never>>>();
  readonly #logger: () => Logger | undefined;

  constructor(logger: () => Logger | undefined = () => undefined) {
    this.#logger = logger;
  }

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => this.off(event, listener);
  }

  /** Adds a listener that runs once. */
  once<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    const off = this.on(event, (payload) => {
      off();
      listener(payload);
    });
    return off;
  }

  off<K extends keyof Events>(event: K, listener: Listener<Events[K]>): void {
    this.#listeners.get(event)?.delete(listener as Listener<never>);
  }

  /** Calls every listener of `event`; a listener that throws is logged, the rest still run. */
  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as Listener<Events[K]>)(payload);
      } catch (error) {
        this.#logger()?.error({ err: error, event }, 'event listener threw');
      }
    }
  }
}
