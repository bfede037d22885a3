import type { Clock } from '../clock.js';
import type { ClaimedJob, Job, JobSummary, Progress, TransactionClient } from '../job/types.js';
import type { StoreChange, NewJob, InsertedJob, Completion, CompletedJobs, Lease, StoredError, CancelRequest, LeaseReport, RescueReport, CancelOutcome, JobFilter, QueueCount, LeaseAcquireResult, LeaseRecord, ServiceRecord, ScheduleDefinitionRow, ScheduleRecord, WorkerRegistration, WorkerRecord, ThroughputRow, FinishedJobFilter, JobBulkFilter, PausedQueue, CancelManyReport, JobTablePart, JobTableStats, QueueLimit, ConcurrencyKeyStat, RateLimit, QueueRateLimit, JobTimelineRecord, ReleaseCause, UnservedTask, QueueOldestDue, QueueDeclaration, QueueSetting, QueueSettingsRecord } from './types.js';
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
export interface Store extends WorkflowStore {
  /** Driver name: "sqlite" or "postgres". */
  readonly driver: string;

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
   * event appended to its timeline; with null, `failed` for good (finished_at now).
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
   * Takes the named lease for `owner` when it is free (never taken, released) or
   * expired at `now`; each successful acquire increments the name's fencing token,
   * which never decreases for a name. A live lease (even one held by `owner`) is
   * not taken: the answer names its holder and expiry. Two acquirers racing for a
   * free lease: exactly one gets it.
   */
  leaseAcquire(params: { name: string; owner: string; ttlMs: number; now: number }): Promise<LeaseAcquireResult>;

  /**
   * Fenced: extends the lease to now + ttlMs while `owner` still holds it under `token`.
   * A lease that expired but was not taken over is still held (its token is still the
   * latest) and is renewed; once another owner acquired it, the renewal is refused.
   * @returns false when it was lost
   */
  leaseRenew(params: { name: string; owner: string; token: number; ttlMs: number; now: number }): Promise<boolean>;

  /** Fenced: frees the lease (keeping its token) while `owner` holds it under `token`; a newer holder's lease is never freed. */
  leaseRelease(params: { name: string; owner: string; token: number }): Promise<boolean>;

  /** The lease row (owner null when free), or null when the name was never taken. */
  leaseGet(params: { name: string }): Promise<LeaseRecord | null>;

  /** Creates the service row when missing (never run, not paused); returns it either way. */
  serviceEnsure(params: { name: string; now: number }): Promise<ServiceRecord>;

  /** The service with the current holder of its lease (live or not). @returns null when no such service */
  serviceGet(params: { name: string }): Promise<ServiceRecord | null>;

  /** Every service, by name, with the holder of its lease (`service:<name>`) when live at `now`. */
  serviceList(params: { now: number }): Promise<ServiceRecord[]>;

  /**
   * Fenced by the lease: in the same statement, stores a run's outcome only while
   * lease `leaseName` is held under `token`. Success (`error` null): last_run_at =
   * lastRunAt, next_run_at = nextRunAt, failures 0. Failure: last_error(_at) set,
   * failures + 1, next_run_at = nextRunAt (the retry time), last_run_at unchanged.
   * @returns false when the lease was lost (nothing written)
   */
  serviceRecord(params: {
    name: string;
    leaseName: string;
    token: number;
    lastRunAt: number;
    nextRunAt: number | null;
    error: string | null;
    now: number;
  }): Promise<boolean>;

  /** @returns false when no such service */
  serviceSetPaused(params: { name: string; paused: boolean; now: number }): Promise<boolean>;

  /** next_run_at = now (due at once). @returns false when no such service */
  serviceTrigger(params: { name: string; now: number }): Promise<boolean>;

  /**
   * Creates or updates a schedule, idempotently: the definition fields are
   * overwritten; next_run_at is set to `nextRunAt` only when the row is new or its
   * cadence (cron, every, timezone) changed, so re-declaring at every boot never
   * moves a pending tick (cases.md C16). `paused` is left as stored.
   * @returns the stored schedule, and whether this call created it
   */
  scheduleUpsert(params: { schedule: ScheduleDefinitionRow; nextRunAt: number | null; now: number }): Promise<{ schedule: ScheduleRecord; created: boolean }>;

  /** @returns the schedule, or null when no such schedule */
  scheduleGet(params: { name: string }): Promise<ScheduleRecord | null>;

  /**
   * Every schedule, paused or not, by name. Takes no parameters (the optional
   * object keeps the one-params-object shape).
   */
  scheduleList(params?: Record<string, never>): Promise<ScheduleRecord[]>;

  /**
   * Unpaused schedules with next_run_at <= now (earliest first, at most `limit`),
   * and the earliest next_run_at of any unpaused schedule (null when none), so the
   * scheduler knows how long it may sleep.
   */
  scheduleDue(params: { now: number; limit: number }): Promise<{ due: ScheduleRecord[]; earliest: number | null }>;

  /**
   * The exactly-once step: in ONE transaction, moves next_run_at from
   * `expectedNextRunAt` to `nextRunAt` (compare-and-set; also requires not paused)
   * and, only when that succeeded, inserts `jobs` (each with its tick's
   * `scheduledFor`; a tick already enqueued is skipped by the unique index).
   * Instances racing for one tick: exactly one advances, the others get
   * `advanced: false` and no jobs. A paused or removed schedule: `advanced: false`.
   * @returns whether this call advanced it, and the jobs it inserted (by id)
   */
  scheduleAdvance(params: {
    name: string;
    expectedNextRunAt: number;
    nextRunAt: number | null;
    jobs: Array<NewJob & { scheduledFor: number }>;
    workerId: string;
    now: number;
  }): Promise<{ advanced: boolean; jobs: Job[] }>;

  /** Inserts one job from the schedule's definition now (scheduled_for null); next_run_at unchanged. null when no such schedule. */
  scheduleTrigger(params: { name: string; now: number }): Promise<Job | null>;

  /** Pausing stops ticks; resuming sets next_run_at to `nextRunAt`. @returns false when no such schedule */
  scheduleSetPaused(params: { name: string; paused: boolean; nextRunAt: number | null; now: number }): Promise<boolean>;

  /** Deletes the schedule (its jobs stay). @returns false when no such schedule */
  scheduleRemove(params: { name: string }): Promise<boolean>;

  /**
   * Creates or refreshes a worker's registry row (at start and on every heartbeat
   * tick): `lastHeartbeatAt` = now, `expiresAt` = now + ttlMs, running ids replaced.
   */
  workerUpsert(params: { worker: WorkerRegistration; ttlMs: number; now: number }): Promise<void>;

  /** Deletes a worker's registry row (at stop). @returns false when there was none */
  workerDelete(params: { id: string }): Promise<boolean>;

  /** Workers whose registration has not expired at `now`, by id. */
  workerList(params: { now: number }): Promise<WorkerRecord[]>;

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
   * Pauses (`paused` true: paused_at = now, kept when already paused) or resumes
   * (paused_at cleared) a queue; pausing creates its row when missing. Every claim that
   * starts after this commits skips a paused queue (jobClaim reads the row in the
   * same statement); a claim already in flight may still start what it took.
   * Resuming wakes other processes' workers (PostgreSQL: NOTIFY `<schema>_jobs`;
   * SQLite: their change watch sees the commit).
   * @returns true when the state changed, false when it already was so
   */
  queueSetPaused(params: { name: string; paused: boolean; now: number }): Promise<boolean>;

  /** The paused queues, by name. Takes no parameters (the optional object keeps the one-params-object shape). */
  queueListPaused(params?: Record<string, never>): Promise<PausedQueue[]>;

  /**
   * Sets (`concurrency` 1..) or clears (null) the fleet-wide limit on running jobs of
   * queue `name`, creating its row when missing, as an override of the declared value
   * (see {@link queueDeclare}): a limit is marked overridden; null is marked overridden
   * only when the queue declares a limit (it then removes that limit until
   * {@link queueClearOverride}), else it just clears. Every claim that starts after this
   * commits honours it (jobClaim counts the queue's running jobs under the limit,
   * exactly, however many workers claim at once); jobs already running over a lowered
   * limit go on, and no new one starts until the count is under it. Raising or clearing
   * a limit wakes other processes' workers as a resume does.
   * @returns true when the limit or its override mark changed, false when it already was so
   */
  queueSetConcurrency(params: { name: string; concurrency: number | null; now: number }): Promise<boolean>;

  /** The queues with a concurrency limit, by name, each with its running jobs now. */
  queueListLimits(params?: Record<string, never>): Promise<QueueLimit[]>;

  /**
   * Sets (`rate`) or clears (null) queue `name`'s rate limit, creating its row when
   * missing: `perKey` false bounds the queue's starts together, true each concurrency
   * key's starts apart (unkeyed jobs are not counted). Every claim that starts after this
   * commits honours it, exactly: in no window of `periodMs` do more than `limit` starts
   * happen (sliding-window log, migration 13). Any change wakes other processes' workers
   * as a resume does. An override of the declared rate, as {@link queueSetConcurrency}'s limit.
   * @returns true when the rate or its override mark changed, false when it already was so
   */
  queueSetRateLimit(params: { name: string; perKey: boolean; rate: RateLimit | null; now: number }): Promise<boolean>;

  /**
   * Stores the settings code declares for each queue (`defineQueue`), creating rows when
   * missing, in name order in one transaction: per setting, the declared value becomes
   * the value in force unless that setting is overridden. Idempotent and safe with many
   * processes declaring at once: a row whose declaration and values in force already
   * match is not written (no lock held, no wake-up). A raised or cleared limit or a
   * changed rate wakes other processes' workers as {@link queueSetConcurrency} does.
   * @param params.queues - distinct names, 1..1000 of them
   * @returns the names of the queues whose row was written (created, or declaration or value in force changed), by name
   */
  queueDeclare(params: { queues: QueueDeclaration[]; now: number }): Promise<string[]>;

  /**
   * Drops the override of one setting of queue `name`: the declared value (none when
   * not declared) is in force again, and the next declaration updates it.
   * @returns true when the setting was overridden, false when it was not (or no such queue)
   */
  queueClearOverride(params: { name: string; setting: QueueSetting; now: number }): Promise<boolean>;

  /** The queues declared in code or with an overridden setting, by name, with their declared values and override marks. */
  queueListSettings(params?: Record<string, never>): Promise<QueueSettingsRecord[]>;

  /**
   * The rate limits of every queue (or of `queues`), by queue then scope (queue first),
   * each with its window at `now`: starts used and when the next is allowed.
   */
  queueListRateLimits(params: { now: number; queues?: string[] }): Promise<QueueRateLimit[]>;

  /**
   * Deletes at most `limit` (1..10000) logged starts that no window at `now` counts any
   * more (older than their queue's longest rate period, or of a queue without a rate
   * limit). The pruner calls it batch after batch.
   * @returns how many were deleted
   */
  rateStartsPrune(params: { now: number; limit: number }): Promise<number>;

  /**
   * The busiest concurrency keys with live jobs (of `queue`, or of every queue): most
   * running first, then most queued, then queue and key; at most `limit` (1..1000).
   * Reads the per-key counts the job triggers keep (migration 12), never the jobs.
   */
  concurrencyKeyList(params: { queue?: string; limit: number }): Promise<ConcurrencyKeyStat[]>;

  /**
   * Whether Baton knows queue `name`: it has a job in any state (what `queueCounts`
   * lists), a worker live at `now` serves it, or it has a row (it was paused once).
   * A bounded read: index probes (queued: the claim index; finished: the
   * (queue, finished_at) index; running: the few running rows).
   */
  queueKnown(params: { name: string; now: number }): Promise<boolean>;

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
export type StoreOperation = Exclude<keyof Store, 'driver' | 'clock' | 'clockSync' | 'migrate' | 'schemaCheck' | 'watchChanges' | 'close'>;

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

/**
 * Thrown by {@link Store.schemaCheck} when the database file the store opened is no
 * longer the file at its path (deleted, or replaced by another): SQLite only. The
 * open connection would go on reading and writing a file no other process sees.
 */
export class DatabaseFileGoneError extends Error {}
