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
   * Watches for changes committed by other connections (other processes). Calls
   * `listener` at most once per `intervalMs` when something changed. Returns stop().
   */
  watchChanges(params: { intervalMs: number; listener: () => void }): () => void;

  /** Closes connections. Later calls fail with StoreError. */
  close(): Promise<void>;
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
