import type { ClaimedJob, Job, JobState, Progress, TransactionClient } from '../job/types.js';

/**
 * The storage driver interface. Every piece of persistence goes through it.
 * Internal: not a public extension point yet.
 *
 * Conventions: one params object per method; `now` is ms since the epoch and
 * comes from the caller's clock; JSON values arrive already serialized (text)
 * and checked by `serializeJson`. Every write about a running job is fenced by
 * `(id, token)`: it applies only while the job is `running` under that lease
 * token, and returns false otherwise (the run lost its lease).
 */
export interface Store {
  /** Driver name, e.g. "sqlite". */
  readonly driver: string;
  /** True when the driver pushes change notifications (LISTEN/NOTIFY); false = polled. */
  readonly supportsListen: boolean;

  /** Applies pending migrations; safe when several processes call it at once. */
  migrate(): Promise<void>;

  /**
   * Inserts jobs in one transaction, in order. A job with a `key` for which a
   * non-terminal job exists is not inserted; that job is returned (created: false).
   * With `client`, the statements run on that caller-owned connection, inside the
   * caller's transaction; a driver that cannot do that throws ConfigError.
   */
  jobInsertMany(params: { jobs: NewJob[]; now: number; client?: TransactionClient }): Promise<InsertedJob[]>;

  /**
   * Claims up to `limit` due queued jobs of `tasks` in `queues`, in order priority,
   * runAt, id. Each claim sets `running`, increments attempt, sets a new lease token
   * and a lease ending at now + leaseMs.
   * @returns claimed jobs in claim order; [] when nothing is due
   */
  jobClaim(params: { workerId: string; tasks: string[]; queues: string[]; limit: number; leaseMs: number; now: number }): Promise<ClaimedJob[]>;

  /**
   * Fenced, batched: each item still running under its token → completed with its
   * `result` (JSON text), all in one transaction.
   * @returns the ids completed (items whose lease was lost are left out)
   */
  jobCompleteMany(params: { items: Completion[]; now: number }): Promise<number[]>;

  /**
   * Fenced: records a failed attempt (appends `error` to errors). With `retryAt`,
   * back to queued at that time; with null, `failed` for good.
   */
  jobFail(params: { id: number; token: number; error: StoredError; retryAt: number | null; now: number }): Promise<boolean>;

  /** Fenced: running (with a cancel request) → cancelled. */
  jobFinishCancelled(params: { id: number; token: number; now: number }): Promise<boolean>;

  /**
   * Fenced, for shutdown hand-off: each still-running lease → queued with runAt now,
   * lease cleared, attempt decremented (not counted), checkpoint kept.
   * @returns ids released
   */
  jobRelease(params: { leases: Lease[]; now: number }): Promise<number[]>;

  /** Fenced: stores the checkpoint (JSON text). */
  jobCheckpoint(params: { id: number; token: number; checkpoint: string }): Promise<boolean>;

  /** Fenced: stores progress. */
  jobProgress(params: { id: number; token: number; progress: Progress }): Promise<boolean>;

  /**
   * One statement: extends every lease of `owner` in `leases` to now + leaseMs.
   * @returns leases `lost` (no longer held) and held jobs with a cancel request
   */
  leaseExtendMany(params: { owner: string; leases: Lease[]; leaseMs: number; now: number }): Promise<LeaseReport>;

  /** Cheap read: which of these running jobs have a cancel request. */
  jobCancelRequests(params: { ids: number[] }): Promise<CancelRequest[]>;

  /**
   * Settles running jobs whose lease expired before `now` (crashed or frozen
   * worker); the lost attempt counts and gets an error entry: cancel requested →
   * cancelled; attempts exhausted → failed; else → queued, runAt now.
   */
  jobRescueExpired(params: { now: number }): Promise<RescueReport>;

  /**
   * Cancels a job. queued → cancelled; running → cancel request stored
   * (`requested`); terminal → unchanged. Repeated requests keep the first time.
   * @returns the job after the change, and what happened; null when no such job
   */
  jobCancel(params: { id: number; reason: string | null; now: number }): Promise<{ job: Job; outcome: CancelOutcome } | null>;

  /**
   * failed or cancelled → queued now, attempt 0, errors kept, result and cancel
   * request cleared. Other states: unchanged (`retried` false).
   */
  jobRetry(params: { id: number; now: number }): Promise<{ job: Job; retried: boolean } | null>;

  jobGet(params: { id: number }): Promise<Job | null>;

  /** Newest first (id descending), `afterId` = exclusive cursor. */
  jobList(params: JobFilter & { limit: number; beforeId?: number }): Promise<Job[]>;

  /** Job counts per queue and state. */
  queueCounts(params: { queuePrefix?: string }): Promise<QueueCount[]>;

  /**
   * Takes the named lease for `owner` when it is free (never taken, released) or
   * expired at `now`; each successful acquire increments the name's fencing token,
   * which never decreases for a name. A live lease (even one held by `owner`) is
   * not taken: the answer names its holder and expiry.
   */
  leaseAcquire(params: { name: string; owner: string; ttlMs: number; now: number }): Promise<LeaseAcquireResult>;

  /** Fenced: extends the lease to now + ttlMs while `owner` still holds it under `token`. */
  leaseRenew(params: { name: string; owner: string; token: number; ttlMs: number; now: number }): Promise<boolean>;

  /** Fenced: frees the lease (keeping its token) while `owner` holds it under `token`; a newer holder's lease is never freed. */
  leaseRelease(params: { name: string; owner: string; token: number }): Promise<boolean>;

  /** The lease row (owner null when free), or null when the name was never taken. */
  leaseGet(params: { name: string }): Promise<LeaseRecord | null>;

  /** Creates the service row when missing (never run, not paused); returns it either way. */
  serviceEnsure(params: { name: string; now: number }): Promise<ServiceRecord>;

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
   */
  scheduleUpsert(params: { schedule: ScheduleDefinitionRow; nextRunAt: number | null; now: number }): Promise<{ schedule: ScheduleRecord; created: boolean }>;

  scheduleGet(params: { name: string }): Promise<ScheduleRecord | null>;

  /** Every schedule, by name. */
  scheduleList(params: { now?: number }): Promise<ScheduleRecord[]>;

  /** Unpaused schedules with next_run_at <= now, and the earliest next_run_at of any unpaused schedule. */
  scheduleDue(params: { now: number; limit: number }): Promise<{ due: ScheduleRecord[]; earliest: number | null }>;

  /**
   * The exactly-once step: in ONE transaction, moves next_run_at from
   * `expectedNextRunAt` to `nextRunAt` (compare-and-set; also requires not paused)
   * and, only when that succeeded, inserts `jobs` (each with its tick's
   * `scheduledFor`; a tick already enqueued is skipped by the unique index).
   * Instances racing for one tick: exactly one advances, the others get
   * `advanced: false` and no jobs.
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
   * Watches for changes committed by other connections (other processes). Calls
   * `listener` at most once per `intervalMs` when something changed. Returns stop().
   */
  watchChanges(params: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void;

  /** Closes connections. Later calls fail with StoreError. */
  close(): Promise<void>;
}

/**
 * What changed, when the driver knows (a pushed notification): a cancel request of
 * a running job. Without it, anything may have changed.
 */
export interface StoreChange {
  cancel?: CancelRequest;
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

export type LeaseAcquireResult =
  | { acquired: true; token: number; expiresAt: number }
  | { acquired: false; owner: string; expiresAt: number };

/** A named lease. `owner`/`expiresAt` null when free; `token` is the last one handed out. */
export interface LeaseRecord {
  name: string;
  owner: string | null;
  token: number;
  expiresAt: number | null;
}

/** A service row. Times are ms since the epoch. `holder`: owner of its live lease (serviceList only). */
export interface ServiceRecord {
  name: string;
  paused: boolean;
  lastRunAt: number | null;
  nextRunAt: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  failures: number;
  updatedAt: number;
  holder: string | null;
  holderUntil: number | null;
}

/** The stored definition of a schedule (what `scheduleUpsert` writes). `payload` is JSON text. */
export interface ScheduleDefinitionRow {
  name: string;
  cron: string | null;
  everyMs: number | null;
  timezone: string;
  task: string;
  payload: string;
  queue: string;
  priority: number;
  maxAttempts: number;
  timeoutMs: number | null;
  catchUp: 'none' | 'latest' | 'all';
  catchUpLimit: number;
}

/** A schedule row. `lastRunAt`: the latest tick enqueued; `lastWorker`: who enqueued it. */
export interface ScheduleRecord extends ScheduleDefinitionRow {
  paused: boolean;
  nextRunAt: number | null;
  lastRunAt: number | null;
  lastWorker: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What a worker writes about itself in the registry. Times are ms since the epoch. */
export interface WorkerRegistration {
  id: string;
  host: string;
  pid: number;
  startedAt: number;
  concurrency: number;
  queues: string[];
  /** Ids of the jobs it runs now. */
  running: number[];
}

/** A registry row. */
export interface WorkerRecord extends WorkerRegistration {
  lastHeartbeatAt: number;
  expiresAt: number;
}

/** Finished jobs of one queue in one minute. */
export interface ThroughputRow {
  queue: string;
  minute: number;
  completed: number;
  failed: number;
}
