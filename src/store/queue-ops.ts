import type { ConcurrencyKeyStat, PausedQueue, QueueDeclaration, QueueLimit, QueueRateLimit, QueueSetting, QueueSettingsRecord, RateLimit } from './types.js';

/**
 * The store operations on queues' settings: pauses, concurrency limits, rate limits (and
 * their start log), declarations from code with their runtime overrides, concurrency keys,
 * and whether a queue is known. Part of the {@link Store} interface (which extends this
 * one), kept apart so the interface reads by concern. Conventions as Store's.
 */
export interface QueueOpsStore {
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
}
