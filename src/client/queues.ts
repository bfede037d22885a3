import * as z from 'zod';
import { NotFoundError } from '../errors.js';
import { JOB_STATES, type JobState } from '../job/types.js';
import { parseInput, queueNameSchema } from '../validation.js';
import type { ClientDeps } from './deps.js';
import type { QueueSetting } from '../store/store.js';
import { QUEUE_SETTINGS } from '../flow/limits.js';
import { concurrencySchema, MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS, rateSchema, type Rate } from '../flow/limits.js';

export { MAX_QUEUE_CONCURRENCY, MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS, type Rate } from '../flow/limits.js';

/** A queue as `baton.queues.list()` shows it. */
export interface QueueInfo {
  name: string;
  /** True while paused: no worker claims from it; running jobs go on. */
  paused: boolean;
  /** When it was paused; null when not paused. */
  pausedAt: Date | null;
  /** Jobs per stored state (0 for a state with none). */
  counts: Record<JobState, number>;
  /** The fleet-wide limit on its running jobs; null when it has none. */
  concurrency: number | null;
  /** Its fleet-wide rate limit on starts, with the window now; null when it has none. */
  rateLimit: RateState | null;
  /** The rate limit on each of its concurrency keys' starts, with the busiest key's window; null when it has none. */
  keyRateLimit: RateState | null;
  /**
   * Its latency, ms: the age of its oldest due queued job (now − the smallest runAt of its
   * queued jobs with runAt <= now), as Sidekiq shows it; 0 when no job is due. What to
   * alert on: it grows when workers fall behind, are paused out, or are missing.
   */
  latencyMs: number;
  /** Live workers that serve this queue (any of their queues), from the registry. */
  workers: number;
  /**
   * Tasks with due queued jobs in this queue that no live worker serving the queue
   * registers, by name, with their due jobs: they wait for ever until such a worker
   * starts. With `workers` 0, every task with due jobs is here (no worker serves the
   * queue at all). [] when every due job has a worker.
   */
  unservedTasks: UnservedTaskInfo[];
  /**
   * Where each setting in force comes from: 'code' (its `defineQueue` declaration),
   * 'override' (set by `setConcurrency`/`setRateLimit`: the CLI, dashboard or HTTP API;
   * it wins over the declaration until cleared with `clearOverride`), null (none set).
   */
  sources: Record<QueueSetting, SettingSource>;
  /** The settings its code declares (`defineQueue`, stored by the last process that started with it); null when not declared in code. */
  declared: { concurrency: number | null; rateLimit: Rate | null; keyRateLimit: Rate | null } | null;
}

/** A task whose due jobs no live worker serves, in one queue. */
export interface UnservedTaskInfo {
  task: string;
  /** Its queued jobs of this queue with runAt <= now. */
  jobs: number;
}

/** Where a queue setting in force comes from: see {@link QueueInfo.sources}. */
export type SettingSource = 'code' | 'override' | null;

/** What `clearOverride` answers. */
export interface ClearOverrideResult {
  queue: string;
  setting: QueueSetting;
  /** False when the setting was not overridden (nothing changed). */
  changed: boolean;
}

/** A rate limit and its window now, as `baton.queues.list()` shows it. */
export interface RateState extends Rate {
  /** Starts in the window that ends now (per key: the busiest key's). */
  used: number;
  /** While the window is full: when a start is next allowed (per key: the first full key's); null while there is room. */
  nextAt: Date | null;
}

/** What `setRateLimit` answers. */
export interface RateLimitResult {
  queue: string;
  /** True for the per-key rate, false for the queue's. */
  perKey: boolean;
  /** The rate now; null when none. */
  rate: Rate | null;
  /** False when it already was so. */
  changed: boolean;
}

/** A concurrency key with live jobs, as `baton.queues.keys()` shows it. */
export interface KeyInfo {
  queue: string;
  key: string;
  queued: number;
  running: number;
  /** The most of its jobs running at once, fleet-wide (the last enqueue's); null = no limit, turns only. */
  limit: number | null;
}

/** What `setConcurrency` answers. */
export interface ConcurrencyResult {
  queue: string;
  /** The limit now; null when none. */
  concurrency: number | null;
  /** False when it already was so. */
  changed: boolean;
}

/** What `pause` and `resume` answer. */
export interface PauseResult {
  queue: string;
  /** The state now. */
  paused: boolean;
  /** False when it already was so (pausing a paused queue keeps its first `pausedAt`). */
  changed: boolean;
}

/** Options of {@link QueueAdmin.setRateLimit}. */
export interface RateLimitOptions {
  /** The per-key rate (each concurrency key of the queue apart) rather than the queue's. @defaultValue false */
  perKey?: boolean;
  /** Set it on a queue Baton does not know yet (see {@link PauseOptions.force}). @defaultValue false */
  force?: boolean;
}

/** Options of {@link QueueAdmin.pause}. */
export interface PauseOptions {
  /**
   * Pause a queue Baton does not know yet (no job in any state, no live worker
   * serving it, never paused): e.g. ahead of its first job. Without it such a name
   * is refused, so that a typo does not pause nothing. @defaultValue false
   */
  force?: boolean;
}

/** `baton.queues`: list queues and pause or resume one, fleet-wide, from any process. */
export interface QueueAdmin {
  /**
   * Every queue that has jobs or a stored setting (paused, limits), by name, with its counts
   * per state, its paused state, limits, latency and the tasks no live worker serves.
   */
  list(): Promise<QueueInfo[]>;
  /**
   * Pauses a queue for the whole fleet; stored, so it outlives worker restarts. Every
   * claim that begins after this returns skips the queue (the claim statement reads
   * the pause itself); a claim already in flight may still start what it took.
   * Jobs running in it go on; new jobs can still be enqueued and wait.
   * @param name - the queue, 1..200 characters
   * @throws ValidationError for a bad name; NotFoundError for a queue Baton does not know (see {@link PauseOptions.force})
   */
  pause(name: string, options?: PauseOptions): Promise<PauseResult>;
  /**
   * Resumes a paused queue: every worker serving it is woken at once (PostgreSQL:
   * NOTIFY; SQLite: the change watch; this process: directly). Resuming a queue that
   * is not paused changes nothing (`changed` false).
   * @throws ValidationError for a bad name; NotFoundError for a queue Baton does not know
   */
  resume(name: string): Promise<PauseResult>;
  /**
   * Sets the most jobs of queue `name` running at once across the whole fleet (every
   * worker, every process), or removes the limit (`null`); stored, so it outlives
   * restarts, and changeable at any time. Exact: claims count the queue's running jobs
   * under the limit, so it is never exceeded, however many workers claim at once. Jobs
   * running over a lowered limit go on; no new one starts until the count is under it.
   * Each worker's own `concurrency` still bounds what that worker runs. Raising or
   * removing a limit wakes waiting workers at once (PostgreSQL: NOTIFY; this process: directly).
   * @param concurrency - 1..1000000, or null for no limit
   * @throws ValidationError for a bad name or limit (0, negative, not an integer); NotFoundError for a queue Baton does not know (see {@link PauseOptions.force})
   */
  setConcurrency(name: string, concurrency: number | null, options?: PauseOptions): Promise<ConcurrencyResult>;
  /**
   * Sets the most jobs of queue `name` that may start in any window of `periodMs`
   * across the whole fleet, or removes it (`null`): with `perKey`, the most of each of
   * its concurrency keys' jobs instead (unkeyed jobs are not counted); the two can be
   * set together. Stored and changeable at any time, like a concurrency limit. Exact: no
   * sliding window of `periodMs` ever holds more than `limit` starts, however many
   * workers claim at once (the store keeps a log of starts; docs/flow-control.md). Jobs
   * over the rate stay queued and start as the window frees places; workers claim again
   * the moment it does. A handler that meets a remote rate limit can instead throw
   * `RateLimitedError` (the job is snoozed, no attempt counted).
   * @param rate - `{ limit: 1..10000, periodMs: 1..604800000 }`, or null for none
   * @param options.perKey - the per-key rate rather than the queue's @defaultValue false
   * @throws ValidationError for a bad name or rate; NotFoundError for a queue Baton does not know (see {@link PauseOptions.force})
   */
  setRateLimit(name: string, rate: Rate | null, options?: RateLimitOptions): Promise<RateLimitResult>;
  /**
   * Drops the override of one setting of queue `name` ('concurrency', 'rateLimit' or
   * 'keyRateLimit', as set by `setConcurrency`/`setRateLimit`): the value its code declares
   * (`defineQueue`; none when it declares none) is in force again at once, and a later
   * deploy that changes the declaration takes effect. Wakes waiting workers as a raised
   * limit does.
   * @throws ValidationError for a bad name or setting; NotFoundError for a queue Baton does not know
   */
  clearOverride(name: string, setting: QueueSetting): Promise<ClearOverrideResult>;
  /**
   * The busiest concurrency keys with live (queued or running) jobs, of queue `name` or
   * of every queue: most running first, then most queued. Read from the per-key counts
   * the database keeps, so it costs the same with 10 or 100,000 jobs per key.
   * @param options.limit - at most this many keys, 1..1000 @defaultValue 20
   * @throws ValidationError for a bad name or limit; NotFoundError for a queue Baton does not know (a known queue without keyed work gives `[]`)
   */
  keys(name?: string, options?: { limit?: number }): Promise<KeyInfo[]>;
}

const pauseOptionsSchema = z.strictObject({ force: z.boolean().optional() });
const rateOptionsSchema = z.strictObject({ perKey: z.boolean().optional(), force: z.boolean().optional() });
const settingSchema = z.enum(QUEUE_SETTINGS);
const keysOptionsSchema = z.strictObject({ limit: z.number().int().min(1).max(1000).optional() });

/** Builds {@link QueueAdmin}; `resume` emits the client event `queue:resumed` (this process's workers claim at once). */
export function queueAdmin(deps: ClientDeps): QueueAdmin {
  /**
   * `force`: the option of pause, setConcurrency and setRateLimit (resume has none, and its
   * message offers none); `verb` names what the hint offers to do ahead of the queue's first job.
   */
  const checkName = async (name: string, force?: boolean, verb = 'pause it') => {
    const queue = parseInput(queueNameSchema, name, 'invalid queue name');
    if (!force && !(await deps.store.queueKnown({ name: queue, now: deps.clock.now() }))) {
      throw new NotFoundError(
        `no queue named ${JSON.stringify(queue)}: it has no job, no live worker serves it, and it has no stored setting` +
          (force === undefined ? '' : ` (to ${verb} ahead of its first job, pass { force: true } / --force)`),
      );
    }
    return queue;
  };
  return {
    async list() {
      const now = deps.clock.now();
      const [counts, paused, limits, rates, settings, oldest, unserved, workers] = await Promise.all([
        deps.store.queueCounts({}), deps.store.queueListPaused(), deps.store.queueListLimits(), deps.store.queueListRateLimits({ now }), deps.store.queueListSettings(),
        deps.store.queueOldestDue({ now }), deps.store.queueUnservedTasks({ now }), deps.store.workerList({ now }),
      ]);
      const byName = new Map<string, QueueInfo>();
      const entry = (name: string) => {
        let info = byName.get(name);
        if (!info) {
          const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
          const serving = workers.filter((w) => w.queues.includes(name)).length;
          byName.set(name, (info = { name, paused: false, pausedAt: null, counts, concurrency: null, rateLimit: null, keyRateLimit: null, sources: { concurrency: null, rateLimit: null, keyRateLimit: null }, declared: null, latencyMs: 0, workers: serving, unservedTasks: [] }));
        }
        return info;
      };
      for (const row of counts) entry(row.queue).counts[row.state] = row.count;
      for (const row of paused) Object.assign(entry(row.queue), { paused: true, pausedAt: new Date(row.pausedAt) });
      for (const row of limits) entry(row.queue).concurrency = row.concurrency;
      for (const { queue, perKey, nextAt, ...rate } of rates) entry(queue)[perKey ? 'keyRateLimit' : 'rateLimit'] = { ...rate, nextAt: nextAt === null ? null : new Date(nextAt) };
      for (const row of oldest) entry(row.queue).latencyMs = Math.max(0, now - row.runAt);
      for (const row of unserved) entry(row.queue).unservedTasks.push({ task: row.task, jobs: row.jobs });
      for (const row of settings) {
        const info = entry(row.queue);
        if (row.declaredAt !== null) info.declared = row.declared;
      }
      const overridden = new Map(settings.map((row) => [row.queue, row.overridden]));
      for (const info of byName.values()) {
        for (const setting of QUEUE_SETTINGS) {
          // A value set before declarations existed (or by hand) counts as an override.
          if (overridden.get(info.name)?.[setting]) info.sources[setting] = 'override';
          else if (info[setting] !== null) info.sources[setting] = info.declared?.[setting] != null ? 'code' : 'override';
        }
      }
      return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    async pause(name, options = {}) {
      const { force = false } = parseInput(pauseOptionsSchema, options, 'invalid pause options');
      const queue = await checkName(name, force);
      return { queue, paused: true, changed: await deps.store.queueSetPaused({ name: queue, paused: true, now: deps.clock.now() }) };
    },
    async resume(name) {
      const queue = await checkName(name);
      const changed = await deps.store.queueSetPaused({ name: queue, paused: false, now: deps.clock.now() });
      if (changed) deps.events.emit('queue:resumed', { queue });
      return { queue, paused: false, changed };
    },
    async setConcurrency(name, concurrency, options = {}) {
      const { force = false } = parseInput(pauseOptionsSchema, options, 'invalid options');
      const limit = parseInput(concurrencySchema, concurrency, 'invalid queue concurrency (an integer 1..1000000, or null for no limit)');
      const queue = await checkName(name, force, 'limit it');
      const changed = await deps.store.queueSetConcurrency({ name: queue, concurrency: limit, now: deps.clock.now() });
      // Room to claim in this process: its workers claim at once, as after a resume.
      if (changed) deps.events.emit('queue:resumed', { queue });
      return { queue, concurrency: limit, changed };
    },
    async setRateLimit(name, rate, options = {}) {
      const { perKey = false, force = false } = parseInput(rateOptionsSchema, options, 'invalid rate limit options');
      const parsed = parseInput(rateSchema, rate, `invalid rate limit ({ limit: 1..${MAX_RATE_LIMIT}, periodMs: 1..${MAX_RATE_PERIOD_MS} }, or null for none)`);
      const queue = await checkName(name, force, 'rate-limit it');
      const changed = await deps.store.queueSetRateLimit({ name: queue, perKey, rate: parsed, now: deps.clock.now() });
      // This process's workers claim at once, as after a resume (a raised rate has room).
      if (changed) deps.events.emit('queue:resumed', { queue });
      return { queue, perKey, rate: parsed, changed };
    },
    async clearOverride(name, setting) {
      const which = parseInput(settingSchema, setting, `invalid setting (one of ${QUEUE_SETTINGS.join(', ')})`);
      const queue = await checkName(name);
      const changed = await deps.store.queueClearOverride({ name: queue, setting: which, now: deps.clock.now() });
      if (changed) deps.events.emit('queue:resumed', { queue });
      return { queue, setting: which, changed };
    },
    async keys(name, options = {}) {
      const { limit = 20 } = parseInput(keysOptionsSchema, options, 'invalid keys options');
      const queue = name === undefined ? undefined : await checkName(name);
      return deps.store.concurrencyKeyList({ ...(queue === undefined ? {} : { queue }), limit });
    },
  };
}
