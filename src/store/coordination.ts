import type { Job } from '../job/types.js';
import type { NewJob } from './types.js';

/**
 * The store operations that coordinate processes rather than jobs: named leases (locks,
 * services, the scheduler), services, schedules and the worker registry. Part of the
 * {@link Store} interface (which extends this one), kept apart so the interface reads by
 * concern. Conventions as Store's: one params object, `now` in ms since the epoch from
 * `Store.clock`, every write by a lease holder fenced by its token.
 */
export interface CoordinationStore {
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
  /** What a tick does while a previous run is queued or running (see Overlap in schedule/schedule.ts). */
  overlap: 'skip' | 'queue' | 'allow' | 'cancelPrevious';
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
  /**
   * The tasks it serves (registers), by name (migration 21). null in a row written by a
   * worker from before that migration: taken to serve every task of its queues.
   */
  tasks: string[] | null;
  /** Ids of the jobs it runs now. */
  running: number[];
}

/** A registry row. */
export interface WorkerRecord extends WorkerRegistration {
  lastHeartbeatAt: number;
  expiresAt: number;
}
