import type { Logger } from 'pino';
import { LeaseLostError, SnoozeError } from '../errors.js';
import { serializeJson } from '../job/payload.js';
import type { ClaimedJob, Json, Progress } from '../job/types.js';
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
   * the last value always written); returns at once.
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
}

/** What a context needs from the run that owns it. */
export interface ContextHost {
  job: ClaimedJob;
  signal: AbortSignal;
  /** Made on first use. */
  logger: () => Logger;
  payloadLimit: number;
  progressInterval: number;
  /** Fenced writes: resolve false when the lease was lost. */
  writeCheckpoint(text: string, value: Json): Promise<boolean>;
  writeProgress(progress: Progress): Promise<boolean>;
  /** Called when a write finds the lease lost. */
  onLeaseLost(): void;
}

/**
 * The per-run context object, plus `flush()` for the executor to write the last
 * throttled progress before the outcome.
 */
export function createContext(host: ContextHost): { ctx: JobContext; flush(): Promise<void>; dispose(): void } {
  let checkpoint: Json = host.job.checkpoint;
  let saving: Promise<unknown> = Promise.resolve();
  let pending: Progress | undefined;
  let lastWrite = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<unknown> = Promise.resolve();

  const writeProgress = () => {
    clearTimeout(timer);
    timer = undefined;
    const progress = pending;
    if (!progress) return writing;
    pending = undefined;
    lastWrite = performance.now();
    writing = writing
      .then(() => host.writeProgress(progress))
      .then((held) => held || host.onLeaseLost())
      .catch((error: unknown) => host.logger().warn({ err: error }, 'progress write failed'));
    return writing;
  };

  const ctx: JobContext = {
    job: host.job,
    signal: host.signal,
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
      if (message !== undefined) progress.message = String(message);
      pending = progress;
      const wait = host.progressInterval - (performance.now() - lastWrite);
      if (wait <= 0) void writeProgress();
      else if (!timer) {
        timer = setTimeout(() => void writeProgress(), wait);
        timer.unref();
      }
    },
    forEach(items, fn, options) {
      return forEach(ctx, items, fn, options);
    },
    snooze(ms: number): never {
      throw new SnoozeError(ms);
    },
  };
  return {
    ctx,
    flush: async () => {
      await writeProgress();
      await saving;
    },
    dispose: () => {
      clearTimeout(timer);
      pending = undefined;
    },
  };
}
