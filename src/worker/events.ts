import type { ClaimedJob, Job, JobWait, Progress } from '../job/types.js';
import type { StepEvent } from '../workflow/steps.js';
import type { ServiceEvents } from '../lease/service.js';
import type { PrunerEvents } from '../maintenance/pruner.js';
import type { TableVacuumEvents } from '../maintenance/vacuum.js';
import type { SchedulerEvents } from '../schedule/scheduler.js';

/** Summary `worker.stop()` resolves with. Counts are jobs. */
export interface StopSummary {
  /** Jobs that reached an outcome (completed, failed, cancelled, retry) during the stop. */
  finished: number;
  /** Jobs released back to `queued` (attempt not counted, checkpoint kept). */
  released: number;
  /** Handlers that never settled and were left behind; their late writes are dropped. */
  abandoned: number;
  /**
   * Ids of the jobs this stop could not hand back or record (the database could not
   * be reached within the stop's budget, see `RELEASE_BUDGET_MS`), ascending. They
   * stay `running` under this worker's lease in the database and are taken over by
   * another worker when the lease expires (`leaseTtl`); their attempt then counts.
   */
  unreleased: number[];
}

/**
 * What the runs of jobs report (the executor, the fetcher, shutdown, the heartbeat).
 * Payload `job` is the job as claimed by this worker.
 */
export interface JobEvents {
  /** Claimed by this worker: `running` in the database, `job.startedAt` the claim's time. */
  'job:claimed': { job: ClaimedJob };
  /**
   * The handler began: right after `job:claimed`, or for a job claimed ahead of a free
   * slot (`prefetch`) when a slot frees. A job claimed ahead that ends while it waits
   * (cancelled, released at stop, lease lost) never has it.
   */
  'job:started': { job: ClaimedJob };
  'job:progress': { job: ClaimedJob; progress: Progress };
  'job:checkpoint': { job: ClaimedJob; checkpoint: unknown };
  /**
   * `durationMs`: the handler's start (`job:started`) to completion, by the worker's clock.
   * `enqueued`: the follow-ups written with the completion (`ctx.enqueueOnComplete`), in
   * call order ([] when none); for one whose `key` a queued or running job held, that job.
   */
  'job:completed': { job: ClaimedJob; result: unknown; durationMs: number; enqueued: Job[] };
  /** `retryAt` is null when the job is now `failed` for good. */
  'job:failed': { job: ClaimedJob; error: unknown; message: string; retryAt: Date | null };
  'job:cancelled': { job: ClaimedJob; reason: string | null };
  /**
   * Released by shutdown: back to queued, attempt not counted. `abandoned`: its
   * handler had not returned and was left behind (it counts in the stop summary's
   * `abandoned` too); its late writes are dropped.
   */
  'job:released': { job: ClaimedJob; abandoned?: boolean };
  /**
   * The handler snoozed (`ctx.snooze(ms)`, or threw a SnoozeError / RateLimitedError):
   * the job is queued again, due at `runAt` (now + `delayMs`), the attempt not counted.
   * `rateLimited` when it was a RateLimitedError.
   */
  'job:snoozed': { job: ClaimedJob; delayMs: number; runAt: Date; rateLimited: boolean };
  /**
   * A running handler's signal fired; `reason` is one of the four abort errors. Not
   * emitted for a job claimed ahead (`prefetch`) that ends while it waits: no handler
   * was aborted, and its `job:cancelled`, `job:released` or `lease:lost` reports it.
   */
  'job:aborted': { job: ClaimedJob; reason: Error };
  /** A step (`ctx.step`, or a durable wait's own) ran, failed, or was replayed from storage; see StepEvent. */
  'job:step': { job: ClaimedJob } & StepEvent;
  /**
   * The run suspended on a durable wait (`ctx.sleep`, `ctx.sleepUntil`, `ctx.receive`):
   * the job is queued again, `waiting` for `wait`, the attempt not counted, the slot free.
   */
  'job:waiting': { job: ClaimedJob; wait: JobWait };
  /** A completing run never reached these stored completed steps (renamed or removed since they ran); reported once, at completion. */
  'job:steps-orphaned': { job: ClaimedJob; steps: string[] };
  /** The worker's lease on the job was taken over; its later writes are dropped. */
  'lease:lost': { job: ClaimedJob };
  /** A write of a run that no longer owns the job was refused by the fencing token. */
  'write:dropped': { job: ClaimedJob; op: string };
}

/**
 * Every event a worker emits (names `noun:verb`): its lifecycle, its jobs' events,
 * and those of the scheduler, the service runners, the pruner and the table vacuum
 * it hosts, merged.
 * Listeners run synchronously; a listener that throws is logged and never
 * crashes the worker (see `TypedEmitter.emit`).
 */
export interface WorkerEvents extends JobEvents, SchedulerEvents, ServiceEvents, PrunerEvents, TableVacuumEvents {
  'worker:started': { workerId: string };
  /**
   * `stop()` was called (or SIGTERM/SIGINT under the CLI). `running`: jobs whose
   * handler runs (they drain); `waiting`: jobs claimed ahead (`prefetch`) whose handler
   * has not started (handed back at once).
   */
  'worker:stopping': { workerId: string; running: number; waiting: number };
  'worker:stopped': { workerId: string; summary: StopSummary };
  /** A background loop (fetch, heartbeat, cancel poll, rescue, vacuum, …) hit an error; it keeps going. */
  'worker:error': { workerId: string; loop: string; error: unknown };
}
