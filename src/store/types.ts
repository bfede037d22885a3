import type { Job, JobState } from '../job/types.js';
import type { ConcurrencyStrategy } from '../job/concurrency.js';

/**
 * The records the {@link Store} operations take and return (store.ts re-exports
 * them). Times are ms since the epoch unless a field says otherwise; JSON fields
 * are serialized text.
 */

/**
 * What changed, when the driver knows (a pushed notification): a cancel request of
 * a running job, jobs made claimable, or jobs that finished. Without any, anything may
 * have changed.
 */
export interface StoreChange {
  cancel?: CancelRequest;
  /** PostgreSQL's NOTIFY on `<schema>_jobs`: jobs may have become claimable (enqueued, retried, woken, a queue resumed or its limit raised); none finished. */
  claimable?: true;
  /** Jobs that finished (PostgreSQL's NOTIFY while a result is awaited, migration 23); [] when it did not say which. */
  finished?: number[];
}

/** A job to insert; JSON fields are serialized text. */
export interface NewJob {
  queue: string;
  task: string;
  payload: string;
  priority: number;
  runAt: number;
  maxAttempts: number;
  timeoutMs: number | null;
  key: string | null;
  /** The concurrency key (none for schedules' jobs). */
  concurrencyKey?: string | null;
  /** Most running jobs of the queue with this key; null = no limit. */
  concurrencyLimit?: number | null;
  /** Applied at insert, in its transaction. @defaultValue 'queue' */
  concurrencyStrategy?: ConcurrencyStrategy;
  /** The W3C trace context to store (Job.traceContext) as JSON text of string fields; null or absent: none. */
  traceContext?: string | null;
}

export interface InsertedJob {
  job: Job;
  created: boolean;
}

/** One completion of `jobCompleteMany`. */
export interface Completion {
  id: number;
  token: number;
  result: string;
  /**
   * Jobs to insert with this completion, in its transaction, and only when it is
   * written (the lease still held): `ctx.enqueueOnComplete`'s follow-ups. Inserted
   * as `jobInsertMany` inserts (a `key` held by a queued or running job: that job,
   * not a new one). Absent or empty: none.
   */
  enqueue?: NewJob[];
}

/** What `jobCompleteMany` wrote. */
export interface CompletedJobs {
  /** The ids completed; items whose lease was lost are left out. */
  completed: number[];
  /**
   * For each completed item with jobs to `enqueue`: the completed job's id and what
   * inserting them returned, in their order (as `jobInsertMany` returns it). [] when
   * no completed item had any.
   */
  enqueued: Array<{ id: number; jobs: InsertedJob[] }>;
}

/** A lease held by a worker: job id plus the fencing token of its claim. */
export interface Lease {
  id: number;
  token: number;
}

export interface StoredError {
  attempt: number;
  time: number;
  message: string;
  stack: string | null;
}

/**
 * The attempt an event of a job's stored timeline is about, as the row held it when the
 * event was written: its number, its lease token (unique per claim), the worker holding
 * it and when it started (ms since the epoch). All null for an event outside an attempt
 * (a queued job's cancel).
 */
export interface StoredAttempt {
  attempt: number | null;
  token: number | null;
  worker: string | null;
  startedAt: number | null;
}

/**
 * One stored event of a job's life (the `timeline` column, migration 18), appended by
 * the statement that made the transition, in the order they happened. `at` (and every
 * time) in ms since the epoch, from the `now` of that statement.
 * - `released`: handed back at shutdown (attempt not counted), due again at `runAt` (the job's own, kept);
 * - `snoozed`: handed back by the handler (ctx.snooze, SnoozeError, RateLimitedError), due at `runAt`;
 * - `rescued`: its lease had expired (the worker died or froze); what the rescuer made of it;
 * - `retryScheduled`: the attempt failed with `error` (its message) and runs again at `runAt`;
 * - `cancelRequested`: a cancel asked by `by` (who, e.g. "http", "cli", "api") with `reason`;
 *   on a running job it carries the attempt, on a queued one it ended the job at once;
 * - `promoted`: a queued job due later made due at once by hand; `runAt` is the time it was due at;
 * - `retried`: a finished job run again by hand; the outcome it had (`state`,
 *   `finishedAt`, the last `error` message, the cancel `reason`) and its last attempt;
 *   `fresh` when its checkpoint and progress were cleared (absent in events stored before issue 30: false).
 */
export type StoredJobEvent = StoredAttempt &
  (
    | { type: 'released'; at: number; runAt: number }
    | { type: 'snoozed'; at: number; runAt: number; rateLimited: boolean }
    | { type: 'rescued'; at: number; outcome: 'queued' | 'failed' | 'cancelled' }
    | { type: 'retryScheduled'; at: number; runAt: number; error: string }
    | { type: 'cancelRequested'; at: number; by: string | null; reason: string | null }
    | { type: 'promoted'; at: number; runAt: number }
    | { type: 'stepsOrphaned'; at: number; steps: string[] }
    | { type: 'waiting'; at: number; runAt: number; wait: { kind: 'sleep' | 'message' | 'children'; until: number; topic?: string; ids?: number[] } }
    | { type: 'retried'; at: number; fresh?: boolean; state: FinishedState; finishedAt: number | null; error: string | null; reason: string | null }
  );

/** What `jobTimeline` reads: the job, its stored events, the lease token of its latest claim and the worker of its latest ended attempt. */
export interface JobTimelineRecord {
  job: Job;
  events: StoredJobEvent[];
  /** The token of the latest claim (0 when never claimed): the current or last attempt's. */
  leaseToken: number;
  /** The worker of the latest attempt that ended (null when none ended). */
  lastWorker: string | null;
}

/** Why `jobRelease` hands jobs back. */
export type ReleaseCause = 'shutdown' | 'snooze' | 'rateLimited';

export interface CancelRequest {
  id: number;
  reason: string | null;
}

export interface LeaseReport {
  lost: number[];
  cancelRequested: CancelRequest[];
}

export interface RescueReport {
  requeued: number[];
  failed: number[];
  cancelled: number[];
}

/** `cancelled`: it is now cancelled; `requested`: running, request stored; `unchanged`: terminal already. */
export type CancelOutcome = 'cancelled' | 'requested' | 'unchanged';

export interface JobFilter {
  state?: JobState;
  queue?: string;
  task?: string;
}

export interface QueueCount {
  queue: string;
  state: JobState;
  count: number;
}

/** Due queued jobs of a task that no live worker serving their queue registers, as `queueUnservedTasks` reads them. */
export interface UnservedTask {
  queue: string;
  task: string;
  /** Its queued jobs with run_at <= now in that queue. */
  jobs: number;
}

/** The oldest due queued job of a queue, as `queueOldestDue` reads it. */
export interface QueueOldestDue {
  queue: string;
  /** The smallest run_at of its queued jobs with run_at <= now, ms since the epoch. */
  runAt: number;
}

/** Finished jobs of one queue in one minute. */
export interface ThroughputRow {
  queue: string;
  minute: number;
  completed: number;
  failed: number;
}

/** The states of a finished job: the ones retention and purges remove. */
export type FinishedState = Extract<JobState, 'completed' | 'failed' | 'cancelled'>;

/**
 * Which finished jobs `jobDeleteFinished` removes: every given field must match.
 * `finishedBefore` is exclusive (finished_at < finishedBefore), in ms since the epoch.
 */
export interface FinishedJobFilter {
  /** At least one state; a queued or running job is never matched, whatever is given. */
  states: FinishedState[];
  queue?: string;
  task?: string;
  finishedBefore?: number;
  /** Only jobs created before it (exclusive, ms since the epoch): a purge's age filter. */
  createdBefore?: number;
  /** Leave jobs of these queues alone (the pruner: queues with a retention of their own). */
  exceptQueues?: string[];
  /** Leave jobs of these tasks alone (the pruner: tasks with a retention of their own). */
  exceptTasks?: string[];
}

/**
 * Which jobs a bulk operation (retry, cancel, count, select) applies to: every
 * given field must match. Times are ms since the epoch, compared strictly
 * (`createdBefore: t` matches jobs created before t, not at t).
 */
export interface JobBulkFilter {
  /** Jobs in one of these states; at least one. */
  states: JobState[];
  queue?: string;
  task?: string;
  createdBefore?: number;
  /** Only finished jobs (finished_at set) that finished before it. */
  finishedBefore?: number;
}

/** A paused queue: `pausedAt` ms since the epoch. */
export interface PausedQueue {
  queue: string;
  pausedAt: number;
}

/** A queue's fleet-wide concurrency limit, as `queueListLimits` reads it. */
export interface QueueLimit {
  queue: string;
  /** The most jobs of the queue running at once across the fleet. */
  concurrency: number;
  /** Its jobs running now (may exceed `concurrency` right after the limit was lowered). */
  running: number;
}

/** A queue setting that code declares and an override may replace: the concurrency limit, the queue's rate, the per-key rate. */
export type QueueSetting = 'concurrency' | 'rateLimit' | 'keyRateLimit';

/** The settings of queue `name` as code declares them (`defineQueue`), for `queueDeclare`; null: none. */
export interface QueueDeclaration {
  name: string;
  concurrency: number | null;
  rateLimit: RateLimit | null;
  keyRateLimit: RateLimit | null;
}

/** A queue's declared settings and which settings are overridden, as `queueListSettings` reads them. */
export interface QueueSettingsRecord {
  queue: string;
  /** When its declaration was last stored (ms since the epoch); null: never declared in code. */
  declaredAt: number | null;
  /** The declared values (all null when never declared). */
  declared: Omit<QueueDeclaration, 'name'>;
  /** Per setting, whether the value in force was set by an override (CLI, dashboard, HTTP) rather than the declaration. */
  overridden: Record<QueueSetting, boolean>;
}

/** A rate: at most `limit` job starts in any window of `periodMs` milliseconds. */
export interface RateLimit {
  /** Starts per window, 1..10000 (a claim counts up to this many logged starts). */
  limit: number;
  /** The window's length, ms, 1..604800000 (7 days). */
  periodMs: number;
}

/** A queue's rate limit and its window at `now`, as `queueListRateLimits` reads it. */
export interface QueueRateLimit extends RateLimit {
  queue: string;
  /** False: the queue's starts together; true: each concurrency key's starts apart. */
  perKey: boolean;
  /** Starts in the window ending now (per key: the busiest key's). */
  used: number;
  /**
   * When a start is next allowed, ms since the epoch, while the window is full (per key:
   * the earliest time any full key's window frees a place); null while there is room.
   */
  nextAt: number | null;
}

/** A concurrency key with live jobs, as `concurrencyKeyList` reads it. */
export interface ConcurrencyKeyStat {
  queue: string;
  key: string;
  queued: number;
  running: number;
  /** The most of its jobs running at once (the last enqueue's); null = no limit. */
  limit: number | null;
}

/** What `jobCancelMany` did, by id (ascending). */
export interface CancelManyReport {
  /** queued → cancelled now. */
  cancelled: number[];
  /** running: the cancel request is stored (or was already); the worker aborts the handler. */
  requested: number[];
}

/**
 * Which of the jobs a table-health call is about: the `live` ones (queued, running:
 * what claims, completions and leases work on) or the `finished` ones (completed,
 * failed, cancelled: what retention deletes). On PostgreSQL each is a table of its
 * own (`jobs`, `jobs_finished`, migration 10); on SQLite both are the one `jobs` table.
 */
export type JobTablePart = 'live' | 'finished';

/**
 * The jobs table's health, as {@link Store.jobTableStats} reads it. PostgreSQL: the
 * server's cumulative statistics (pg_stat_user_tables), which each backend reports up
 * to ~1 s after its transaction ends, so the figures trail recent writes. SQLite
 * deletes and updates rows in place: it never has dead rows.
 */
export interface JobTableStats {
  /** Estimated live rows (PostgreSQL n_live_tup); null where the driver keeps no estimate (SQLite). */
  liveRows: number | null;
  /** Dead row versions a VACUUM would remove (PostgreSQL n_dead_tup); always 0 on SQLite. */
  deadRows: number;
  /**
   * Whether the database cleans the table by itself: PostgreSQL, the server's
   * `autovacuum` and `track_counts` settings are on and the table's
   * `autovacuum_enabled` is not off; SQLite, always true.
   */
  autovacuum: boolean;
}
