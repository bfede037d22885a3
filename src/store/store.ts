import type { Clock } from '../clock.js';
import type { ClaimedJob, Job, JobSummary, Progress, TransactionClient } from '../job/types.js';
import type { StoreChange, NewJob, InsertedJob, Completion, CompletedJobs, Lease, StoredError, CancelRequest, LeaseReport, RescueReport, CancelOutcome, JobFilter, QueueCount, ThroughputRow, FinishedJobFilter, JobBulkFilter, CancelManyReport, JobTablePart, JobTableStats, JobTimelineRecord, ReleaseCause, UnservedTask, QueueOldestDue } from './types.js';
import type { CoordinationStore } from './coordination.js';
import type { QueueOpsStore } from './queue-ops.js';
import type { WorkflowStore } from './workflow.js';

/**
 * The storage driver interface. Every piece of persistence goes through it.
 * Internal: not a public extension point yet.
 *
 * Conventions: one params object per method; `now` is ms since the epoch and
 * comes from the caller's clock, which should be {@link Store.clock} (the
 * database's time) unless a test injects its own; JSON values arrive already
 * serialized (text) and checked by `serializeJson`. Every write about a running
 * job is fenced by `(id, token)`: it applies only while the job is `running`
 * under that lease token, and returns false otherwise (the run lost its lease).
 * Errors: a driver throws what its database library throws; the instrumented
 * wrapper (instrumented.ts) maps it to `StoreError { op }`. BatonErrors a driver
 * throws on purpose (ConflictError, ConfigError) pass through unchanged.
 *
 * The same operations are implemented per driver in `sqlite/` and `postgres/`, one
 * file per concern (jobs, job-leases, leases, queues, schedules, services,
 * workers), composed by {@link DriverStore}; test/conformance runs every method on
 * both drivers.
 */
export interface Store extends WorkflowStore, CoordinationStore, QueueOpsStore {
  /** Driver name: "sqlite" or "postgres". */
  readonly driver: string;
  /**
   * Capability: statements this store carries at once, so the claims a worker keeps in flight
   * together (worker/claim-loop.ts). PostgreSQL: the pool's size (`?pool_size=`); SQLite: 1.
   */
  readonly claimsInFlight: number;

  /**
   * The database's time, in ms since the epoch: what every `now` passed to this
   * store should come from, so that hosts whose clocks disagree still agree on
   * leases, `runAt` and schedule ticks. SQLite: this host's clock (every process
   * sharing the file runs on this host). PostgreSQL: this host's clock plus the
   * offset to the server's clock measured by the latest {@link Store.clockSync}
   * (0 until the first one).
   */
  readonly clock: Clock;

  /**
   * Measures how far the database's clock is from this host's and updates
   * {@link Store.clock}. PostgreSQL: three reads of `clock_timestamp()`, the one
   * with the shortest round trip kept, the server's time compared with the midpoint
   * of the round trip (error at most half of `roundTripMs`). SQLite: no I/O, offset 0.
   * @returns `offsetMs` = database time − host time (positive: the host is behind),
   *   and the round trip of the kept read, both in ms
   * @throws StoreError when the database cannot be reached (op "clockSync")
   */
  clockSync(): Promise<ClockReading>;

  /**
   * Applies pending migrations in version order, each with its ledger row, in one
   * transaction under the driver's migration lock; safe when several processes call
   * it at once (one applies, the others then find nothing to do).
   * @throws ConfigError when the database holds a breaking migration newer than this code knows
   */
  migrate(): Promise<void>;

  /**
   * Checks, without writing, that the schema holds every migration this code has
   * and no breaking one newer than it knows: what a read-only opener does instead
   * of {@link Store.migrate}.
   * @throws ConfigError when the database holds a breaking migration newer than this code knows
   * @throws StoreError when a migration this code needs is missing (run `migrate` first), or the database cannot be read
   */
  schemaCheck(): Promise<void>;

  /**
   * Inserts jobs in one transaction, in order, all or none. A job with a `key`
   * for which a queued or running job exists is not inserted; that job is returned
   * (created: false), also when two inserters race for one key (exactly one creates).
   * With `client`, the statements run on that caller-owned connection, inside the
   * caller's transaction (PostgreSQL).
   * @returns one entry per input job, in input order
   * @throws ConfigError with `client` on a driver that cannot use it (SQLite)
   */
  jobInsertMany(params: { jobs: NewJob[]; now: number; client?: TransactionClient }): Promise<InsertedJob[]>;

  /**
   * Claims up to `limit` due (runAt <= now) queued jobs of `tasks` in `queues` (paused queues skipped),
   * in order priority, runAt, id. Each claim sets `running`, increments attempt,
   * sets a new lease token (the fencing token: it only grows) and a lease for
   * `workerId` ending at now + leaseMs. Concurrent claimers never get the same job.
   * @param params.limit - free slots to fill, ≥ 1
   * @param params.leaseMs - lease length in ms
   * @returns claimed jobs in claim order; [] when nothing is due
   */
  jobClaim(params: { workerId: string; tasks: string[]; queues: string[]; limit: number; leaseMs: number; now: number }): Promise<ClaimedJob[]>;

  /**
   * Fenced, batched: each item still running under its token → completed with its
   * `result` (JSON text) and finished_at now, lease cleared (its holder kept as the
   * last worker), in one statement. An
   * item whose job was taken over, cancelled or finished meanwhile is not written.
   * Items with jobs to `enqueue` (follow-ups): in the same transaction, the follow-ups
   * of the items completed are inserted as {@link jobInsertMany} inserts them, and those
   * of the items not written are not: all or nothing per item. A batch with no
   * follow-up is the one statement alone (PostgreSQL: with asynchronous commit, see
   * ASYNC_COMMIT); one with any commits durably, as an enqueue does.
   * @returns `completed`: the ids completed (items whose lease was lost are left out);
   *   `enqueued`: the follow-ups inserted, per completed item that had any
   */
  jobCompleteMany(params: { items: Completion[]; now: number }): Promise<CompletedJobs>;

  /**
   * {@link jobCompleteMany} of `items`, then {@link jobClaim} with the other params, in
   * one transaction: the worker's cycle of writing the jobs that just finished and
   * filling their slots, with one commit instead of two (PostgreSQL: one statement,
   * one round trip, when no item has follow-ups; SQLite: one write transaction). The
   * claim sees the completions and their follow-ups (a queue's or key's limit counts
   * the completed jobs as ended; a follow-up due now may be claimed at once). Fails as
   * a whole: on an error neither the completions, their follow-ups nor the claim are written.
   * @param params.limit - free slots to fill, ≥ 1
   * @returns `completed` and `enqueued`: as jobCompleteMany's result; `claimed`: as jobClaim's
   */
  jobCompleteAndClaim(params: { items: Completion[]; workerId: string; tasks: string[]; queues: string[]; limit: number; leaseMs: number; now: number }): Promise<CompletedJobs & { claimed: ClaimedJob[] }>;

  /**
   * Fenced: records a failed attempt (appends `error` to errors), lease cleared.
   * With `retryAt`, back to queued at that time (attempt kept) and a `retryScheduled`
   * event appended to its timeline — unless a cancel was requested meanwhile: then
   * `cancelled` (finished_at now), not retried; with null, `failed` for good (finished_at now).
   * Either way the attempt's worker is kept as its last worker.
   * @returns false when the lease was lost (nothing written)
   */
  jobFail(params: { id: number; token: number; error: StoredError; retryAt: number | null; now: number }): Promise<boolean>;

  /**
   * Fenced: running → cancelled (finished_at now, lease cleared); the handler
   * stopped after a cancel request. @returns false when the lease was lost
   */
  jobFinishCancelled(params: { id: number; token: number; now: number }): Promise<boolean>;

  /**
   * Fenced, for shutdown hand-off and snoozes: each still-running lease → queued, lease
   * cleared, attempt decremented (not counted), checkpoint kept; a job with a cancel
   * request becomes cancelled instead (finished now). Without `runAt` each job keeps
   * its runAt, so it is due at once and keeps its place in line (claims go by priority,
   * runAt, id): ahead of every job of its priority that was due after it. With `runAt`
   * (a snooze) it is due then, placed as a job delayed to that time.
   * Each released job's timeline gets, in the same statement, a `released` event
   * (cause `shutdown`) or a `snoozed` one, with the attempt it ends and its new runAt.
   * @param params.runAt - when the released jobs are due again, ms since the epoch (a snooze's now + delay); @defaultValue each job's own runAt
   * @param params.cause - @defaultValue `'shutdown'`
   * @returns ids released (leases lost meanwhile are left out)
   */
  jobRelease(params: { leases: Lease[]; now: number; runAt?: number; cause?: ReleaseCause }): Promise<number[]>;

  /** Fenced: stores the checkpoint (JSON text). @returns false when the lease was lost */
  jobCheckpoint(params: { id: number; token: number; checkpoint: string }): Promise<boolean>;

  /** Fenced: stores progress. @returns false when the lease was lost */
  jobProgress(params: { id: number; token: number; progress: Progress }): Promise<boolean>;

  /**
   * One statement: extends every lease of `owner` in `leases` (still running
   * under that token) to now + leaseMs.
   * @returns `lost`: ids no longer held (taken over, finished, released or rescued);
   *   `cancelRequested`: held jobs with a cancel request, with its reason
   */
  leaseExtendMany(params: { owner: string; leases: Lease[]; leaseMs: number; now: number }): Promise<LeaseReport>;

  /** Cheap read: which of these jobs are running with a cancel request. @returns [] when none */
  jobCancelRequests(params: { ids: number[] }): Promise<CancelRequest[]>;

  /**
   * Settles running jobs whose lease expired before `now` (crashed or frozen
   * worker); the lost attempt counts and gets an error entry: cancel requested →
   * cancelled; attempts exhausted → failed; else → queued with its runAt kept (due at
   * once, in its place in line, as a shutdown release leaves it). A job claimed
   * again meanwhile has a fresh lease and is left alone; racing rescuers settle each
   * job once. Each settled job's timeline gets a `rescued` event (the attempt, its
   * dead worker, the outcome) in the same statement.
   * @returns the ids per outcome; all empty when no lease had expired
   */
  jobRescueExpired(params: { now: number }): Promise<RescueReport>;

  /**
   * Cancels a job. queued → cancelled; running → cancel request stored
   * (`requested`); terminal → unchanged. Repeated requests keep the first time.
   * A new request (queued or running) appends a `cancelRequested` event naming `by`
   * to the job's timeline in the same statement; a repeated one appends nothing.
   * The job's unfinished children (migration 24) are cancelled in the same statement or
   * transaction: queued → cancelled, running → a request, each by "job <id>" (one level).
   * @param params.by - who asked (e.g. "http", "cli", "api"); @defaultValue null
   * @returns the job after the change, and what happened; null when no such job
   */
  jobCancel(params: { id: number; reason: string | null; by?: string | null; now: number }): Promise<{ job: Job; outcome: CancelOutcome } | null>;

  /**
   * failed or cancelled → queued now, attempt 0, errors kept, result and cancel
   * request cleared; a `retried` event keeps the outcome it had (and whether the retry
   * was fresh) in its timeline. The checkpoint, progress and step log are kept, so the next
   * run resumes where the last one stopped; with `fresh` they are cleared too (from scratch).
   * Other states: unchanged (`retried` false).
   * @param params.fresh - clear checkpoint and progress; @defaultValue false
   * @returns the job after the change; null when no such job
   * @throws ConflictError when the job has a key now held by another queued or running job
   */
  jobRetry(params: { id: number; now: number; fresh?: boolean }): Promise<{ job: Job; retried: boolean } | null>;

  /**
   * Runs a waiting job now (BullMQ's `job.promote()`): a queued job whose runAt is
   * after `now` (delayed, awaiting a retry, snoozed) → runAt now, so the next claim of
   * its queue may take it (by priority, then runAt: ahead of the jobs due later), with
   * a `promoted` event (the runAt it had) in its timeline in the same statement, and
   * workers of other processes woken (PostgreSQL: NOTIFY `<schema>_jobs`; SQLite: their
   * change watch sees the commit). Any other job (queued and already due, running,
   * finished) is unchanged (`promoted` false): its state and runAt say why; so is a job
   * suspended on a durable wait (`wait` set): promoted, it would only suspend again.
   * @returns the job after the call; null when no job has this id
   */
  jobPromote(params: { id: number; now: number }): Promise<{ job: Job; promoted: boolean } | null>;

  /** @returns the job, or null when no job has this id */
  jobGet(params: { id: number }): Promise<Job | null>;

  /**
   * Reads a job with its stored timeline (migration 18): the events its transitions
   * appended, in order, plus what the current or last attempt's start is told from
   * (the latest claim's lease token, the last ended attempt's worker). One read.
   * @returns null when no job has this id
   */
  jobTimeline(params: { id: number }): Promise<JobTimelineRecord | null>;

  /**
   * Jobs matching every given filter field, newest first (id descending), as summaries:
   * payload, result, checkpoint and the last error's message are cut to their first
   * PREVIEW_CHARS characters in the database (with their whole size in bytes), the other
   * errors and the timeline are not read out, so a page costs the same whatever the values hold.
   * @param params.limit - at most this many jobs
   * @param params.beforeId - exclusive cursor: only jobs with a smaller id (the last id of the previous page)
   * @returns up to `limit` jobs; [] when none match
   */
  jobList(params: JobFilter & { limit: number; beforeId?: number }): Promise<JobSummary[]>;

  /**
   * Job counts per queue and state, by queue then state; pairs with no job are left out.
   * @param params.queuePrefix - only queues whose name starts with it
   */
  queueCounts(params: { queuePrefix?: string }): Promise<QueueCount[]>;

  /**
   * Due queued jobs (run_at <= now) whose task no worker live at `now` that serves their
   * queue registers, counted per queue and task, by queue then task: work that waits for
   * ever until such a worker starts. A queue no live worker serves at all has every due
   * task listed. A worker registered without tasks (a row from before migration 21) is
   * taken to serve every task of its queues. Jobs not yet due are left out (a worker may
   * start before they are). Cost: one pass over the queued jobs (as queueCounts), then
   * one probe of the workers per (queue, task).
   */
  queueUnservedTasks(params: { now: number }): Promise<UnservedTask[]>;

  /**
   * Per queue with a due queued job (run_at <= now), the oldest such run_at: a queue's
   * latency is now minus it. By queue. Read by loose index scans of the claim indexes
   * (one probe per distinct (queue, priority) of unkeyed jobs and per (queue, key,
   * priority) of keyed ones), never by reading the queued jobs one by one.
   */
  queueOldestDue(params: { now: number }): Promise<QueueOldestDue[]>;

  /**
   * Jobs that finished (completed or failed) since `since`, per queue and minute
   * (`minute` = start of the minute, ms since the epoch), oldest first.
   */
  queueThroughput(params: { since: number }): Promise<ThroughputRow[]>;

  /**
   * Deletes up to `limit` finished jobs matching the filter, oldest first (finished_at,
   * then id), in one statement: one bounded batch per call, read through the index of
   * finished jobs by state, so no statement scans or locks the whole table. Queued and
   * running jobs are never deleted, nor a job that leaves a matching state while the
   * batch runs (retried meanwhile). Callers loop until it returns less than `limit`.
   * Used by the pruner (retention) and by purges of finished jobs by filter.
   * SQLite: the pages freed go back to the file system at once when the file was
   * created with incremental auto-vacuum (every file Baton creates).
   * @param params.limit - batch size, 1..10000
   * @returns how many jobs were deleted (0 when none matched)
   */
  jobDeleteFinished(params: FinishedJobFilter & { limit: number }): Promise<number>;

  /**
   * Keep-N: deletes up to `limit` finished jobs of `queue` beyond its newest `keep`
   * (newest by finished_at, then id; every finished state counts), oldest first, in
   * one statement. Cost: reads `keep` entries of the queue's index of finished jobs,
   * plus the batch.
   * @param params.keep - finished jobs to keep, 0..1000000
   * @param params.limit - batch size, 1..10000
   * @returns how many jobs were deleted (0 when the queue has at most `keep`)
   */
  jobDeleteFinishedBeyond(params: { queue: string; keep: number; limit: number }): Promise<number>;

  /**
   * Deletes a job that is not running (queued, completed, failed, cancelled), with its
   * step log and messages (migration 22). A
   * running job is left alone (`deleted` false, `state` 'running'), also when it
   * was claimed while this ran.
   * @returns the job's state before, and whether it was deleted; null when no such job
   */
  jobDelete(params: { id: number }): Promise<{ state: Job['state']; deleted: boolean } | null>;

  /** How many jobs match `filter` (a dry run's count). One read, no lock. */
  jobCount(params: JobBulkFilter): Promise<number>;

  /**
   * Ids of jobs matching `filter` with id > `afterId`, ascending, at most `limit`:
   * the cursor a bulk operation pages through, one batch at a time.
   * @param params.limit - batch size, ≥ 1
   */
  jobSelectIds(params: JobBulkFilter & { afterId: number; limit: number }): Promise<number[]>;

  /**
   * {@link jobRetry} for each of `ids` in one transaction: failed or cancelled →
   * queued now, attempt 0 (with `fresh`, checkpoint and progress cleared). Left out: jobs
   * in another state, and keyed jobs whose key a queued or running job holds (or an
   * earlier id of this batch took).
   * @param params.fresh - as jobRetry's; @defaultValue false
   * @returns the ids retried, ascending
   */
  jobRetryMany(params: { ids: number[]; now: number; fresh?: boolean }): Promise<number[]>;

  /**
   * {@link jobCancel} for each of `ids` in one transaction: queued → cancelled now;
   * running → cancel request stored (the first time and reason kept), which reaches
   * the worker as a single cancel does; other states and unknown ids: left out. The
   * unfinished children of the jobs cancelled or requested are cancelled too, as jobCancel does.
   * Each new request appends a `cancelRequested` event naming `by`, as jobCancel does.
   */
  jobCancelMany(params: { ids: number[]; reason: string | null; by?: string | null; now: number }): Promise<CancelManyReport>;

  /**
   * Reads the health of the table holding `part` of the jobs (dead rows, live rows,
   * whether the database vacuums it by itself): one cheap read of the server's
   * statistics, no scan of the table. The table vacuum (src/maintenance/vacuum.ts) polls it.
   * @param params.part - @defaultValue `'live'`
   */
  jobTableStats(params?: { part?: JobTablePart }): Promise<JobTableStats>;

  /**
   * Cleans the table holding `part` of the jobs (default `'live'`) now. PostgreSQL:
   * `VACUUM (SKIP_LOCKED, ANALYZE)` of `jobs` or `jobs_finished`, which removes dead rows from the table and its indexes without blocking reads
   * or writes and refreshes the planner's statistics, and returns at once (doing nothing) while another vacuum of the table runs
   * (autovacuum's, or another process's): two never queue behind each other. It runs on
   * a connection of its own, not the pool's (a pass can take seconds). It needs
   * the table's owner (or a superuser); for another role PostgreSQL skips it with a
   * warning. SQLite: hands the file's free pages back to the file system
   * (`PRAGMA incremental_vacuum`; files Baton creates use incremental auto-vacuum).
   * @throws StoreError when the database cannot be reached
   */
  jobTableVacuum(params?: { part?: JobTablePart }): Promise<void>;

  /**
   * Watches for changes committed by other connections (other processes) and calls
   * `listener` soon after each: with a {@link StoreChange} naming it when the driver
   * knows (PostgreSQL's cancel NOTIFY), else without (anything may have changed).
   * SQLite: a watch on the WAL file, within a few ms of the commit, and a poll of
   * `PRAGMA data_version` every `intervalMs` (ms) as the safety net; at most one call
   * per check, none for this connection's own writes. PostgreSQL: one call per
   * NOTIFY (`intervalMs` is not used), and one without a change each time the LISTEN
   * connection is up (the first time, and back from an outage): a change committed
   * before then notified no one. Returns stop().
   */
  watchChanges(params: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void;

  /** Closes connections. Later calls fail with StoreError. */
  close(): Promise<void>;
}

/** The name of every operation of a {@link Store} that takes a params object. */
export type StoreOperation = Exclude<keyof Store, 'driver' | 'claimsInFlight' | 'clock' | 'clockSync' | 'migrate' | 'schemaCheck' | 'watchChanges' | 'close'>;

/** The params object of a store operation, e.g. `StoreParams<'jobClaim'>`. */
export type StoreParams<K extends StoreOperation> = Parameters<Store[K]>[0];

/** One measurement of {@link Store.clockSync}. */
export interface ClockReading {
  /** Database time minus host time, in ms (positive: this host is behind). */
  offsetMs: number;
  /** Round trip of the read the offset comes from, in ms (its error is at most half of it). */
  roundTripMs: number;
}

/** The records the operations take and return. */
export type * from './types.js';
export type * from './workflow.js';
export type * from './coordination.js';
export type * from './queue-ops.js';

/**
 * Thrown by {@link Store.schemaCheck} when the database file the store opened is no
 * longer the file at its path (deleted, or replaced by another): SQLite only. The
 * open connection would go on reading and writing a file no other process sees.
 */
export class DatabaseFileGoneError extends Error {}
