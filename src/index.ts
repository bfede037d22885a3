/**
 * Baton: durable background jobs for TypeScript on Node.js.
 * The main public entry point. The HTTP API (`createHttpApp`, hono) and the
 * Prometheus metrics (`createMetrics`, prom-client) have entries of their own,
 * `baton-jobs/http` and `baton-jobs/metrics`, so that a worker that serves
 * neither does not load them (start-up time: docs/benchmarks.md).
 */
export { createBaton, type Baton } from './baton.js';
export type { Client, EnqueueRest } from './client/client.js';
export { FOLLOW_INTERVAL_MS, FOLLOW_MIN_GAP_MS, type FollowOptions, type JobSnapshot } from './client/follow.js';
export type { BatonOptions } from './config.js';
export { defineTask, isTask, tasksFromModule, type Task, type AnyTask, type TaskOptions, type PayloadOf, type InputOf, type ResultOf } from './job/task.js';
export { defineQueue, isQueue, type Queue, type QueueOptions } from './flow/queue.js';
export type { Backoff } from './job/backoff.js';
export type { Job, JobState, JobError, JobWait, Progress, Json, EnqueueOptions, JobSummary, Preview, ErrorPreview } from './job/types.js';
export { JOB_STATES, TERMINAL_STATES, PREVIEW_CHARS, NEVER } from './job/types.js';
export { STEP_NAME_MAX, type StepOptions, type StepFn, type StepEvent } from './workflow/steps.js';
export { LIVE_WAIT_MS, MAX_WAIT_MS, TOPIC_MAX, WaitSuspension, type ReceiveOptions } from './workflow/waits.js';
export { ChildFailedError, type ChildOptions, type ChildJob, type ChildOutcome, type ChildFailurePolicy } from './workflow/children.js';
export { jobView, type JobView } from './job/view.js';
export { DEFAULT_PAYLOAD_LIMIT, MAX_JSON_DEPTH } from './job/payload.js';
export type { EnqueueItem } from './client/enqueue.js';
export type { CancelResult, CancelOptions } from './client/cancel.js';
export type { SendTarget, SendOptions, SendResult } from './client/send.js';
export type { JobStep } from './client/steps.js';
export { WaitError, JobFailedError, JobCancelledError, WaitTimeoutError, WaitClosedError, WAIT_POLL_MS, WAITER_TTL_MS, WAITER_LINGER_MS, type WaitOptions } from './client/wait-result.js';
export type { RetryOptions } from './client/retry.js';
export type { PromoteResult } from './client/promote.js';
export type { TimelineEntry, TimelineBase } from './job/timeline.js';
export type { ListOptions } from './client/query.js';
export type { WorkerInfo, ThroughputPoint } from './client/fleet.js';
export { READY_TIMEOUT_MS, type Readiness, type ReadinessCheck } from './client/readiness.js';
export { MAX_QUEUE_CONCURRENCY, MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS, type QueueAdmin, type QueueInfo, type UnservedTaskInfo, type PauseOptions, type PauseResult, type ConcurrencyResult, type KeyInfo, type Rate, type RateState, type RateLimitResult, type RateLimitOptions, type SettingSource, type ClearOverrideResult } from './client/queues.js';
export type { QueueSetting } from './store/types.js';
export { CONCURRENCY_STRATEGIES, MAX_KEY_CONCURRENCY, type ConcurrencyStrategy, type KeyConcurrency } from './job/concurrency.js';
export type { JobAdmin, BulkFilter, BulkOptions, BulkResult, RetryManyOptions, RetryManyResult, CancelManyOptions, CancelManyResult, PurgeResult } from './client/bulk.js';
export { Worker, type WorkerStatus } from './worker/worker.js';
export type { WorkerOptions } from './worker/options.js';
export type { JobContext } from './worker/context.js';
export type { ForEachOptions, ForEachResult } from './worker/for-each.js';
export type { WorkerEvents, JobEvents, StopSummary } from './worker/events.js';
export type { SchedulerEvents } from './schedule/scheduler.js';
export type { ServiceEvents } from './lease/service.js';
export type { ClientEvents } from './client/events.js';
export { sleep, systemClock, type Clock } from './clock.js';
export { defineSchedule, type Schedule, type ScheduleOptions, type ScheduleInfo, type ScheduleAdmin, type CatchUp, type Overlap, OVERLAP_POLICIES } from './schedule/schedule.js';
export { parseCadence, type Cadence, type ParsedCadence } from './schedule/cron.js';
export { defineService, type Service, type ServiceOptions, type ServiceContext } from './lease/service.js';
export type { ServiceInfo, ServiceAdmin } from './lease/service-admin.js';
export type { LockOptions, LockContext } from './lease/with-lock.js';
export { DEFAULT_RETENTION, type RetentionOptions, type QueueRetention, type StateRetention, type RetentionAge } from './maintenance/retention.js';
export { PRUNER_SERVICE, type PrunerEvents, type PruneReport } from './maintenance/pruner.js';
export { VACUUM_CHECK_INTERVAL_MS, VACUUM_DEAD_FRACTION, VACUUM_DEAD_ROWS, type TableVacuumEvents } from './maintenance/vacuum.js';
export {
  BatonError,
  ValidationError,
  PayloadTooLargeError,
  NotFoundError,
  ConflictError,
  ConfigError,
  StoreError,
  NonRetryableError,
  SnoozeError,
  RateLimitedError,
  MAX_SNOOZE_MS,
  AbortReason,
  CancelledError,
  ShutdownError,
  TimeoutError,
  LeaseLostError,
  LockBusyError,
  type ValidationIssue,
} from './errors.js';
