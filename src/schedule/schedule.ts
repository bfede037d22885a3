/**
 * Recurring schedules: definitions (validated when defined), the idempotent upsert
 * that stores them, and the admin operations (list, pause, resume, trigger, remove).
 * The loop that enqueues due ticks is scheduler.ts.
 */
import * as z from 'zod';
import type { Clock } from '../clock.js';
import { ConfigError, NotFoundError } from '../errors.js';
import { DEFINITION_NAME, parseConfig, storableString } from '../validation.js';
import { DEFAULT_PAYLOAD_LIMIT, serializeJson } from '../job/payload.js';
import { isTask, validatePayload, type AnyTask } from '../job/task.js';
import type { Job, Json } from '../job/types.js';
import type { ScheduleDefinitionRow, ScheduleRecord, Store } from '../store/store.js';
import { parseCadence, type ParsedCadence } from './cron.js';

const SCHEDULE_BRAND = Symbol.for('baton.schedule');
/** Attempts of a scheduled job when neither the schedule nor its task says. */
const DEFAULT_MAX_ATTEMPTS = 3;

/**
 * What to do with ticks missed while no instance was running: a tick the scheduler
 * first sees more than 10 s (`ON_TIME_GRACE_MS` in plan.ts) after its time counts as
 * missed; one seen within those 10 s is on time and always enqueued.
 */
export type CatchUp = 'none' | 'latest' | 'all';

/**
 * What a tick does while the schedule's previous run is still queued or running
 * (Temporal's overlap policies, Quartz's DisallowConcurrentExecution). The runs of a
 * schedule with any policy but `allow` share one concurrency key of limit 1
 * (`baton:schedule:<name>`), so at most one runs at a time across the fleet; then:
 * - `skip` (the default): the tick is recorded as skipped — its job ends `cancelled` at
 *   once with a reason naming the overlap, and the scheduler emits `schedule:overlapped`;
 * - `queue`: the tick waits for the running one; at most one waits (a newer tick
 *   supersedes a waiting one, which ends `cancelled`);
 * - `allow`: every tick runs, however many at once (what cron does);
 * - `cancelPrevious`: the tick cancels the running one through the cooperative cancel
 *   (its handler's signal aborts with a CancelledError naming the new job) and runs once it has ended.
 * `skip` is the default because a run that outlasts its interval then costs nothing, where
 * `allow` piles up runs on a slow day. `trigger()` runs one at once under every policy.
 */
export type Overlap = 'skip' | 'queue' | 'allow' | 'cancelPrevious';

/** The policies, for validation and docs. */
export const OVERLAP_POLICIES = ['skip', 'queue', 'allow', 'cancelPrevious'] as const satisfies readonly Overlap[];

/** Options of `defineSchedule` / `baton.schedule`. */
export interface ScheduleOptions {
  /** Cron expression (5 fields, or 6 with seconds first). Exactly one of cron and every. */
  cron?: string;
  /** Fixed interval in ms (>= 1000), on the lattice k·every since the epoch. */
  every?: number;
  /** IANA time zone for `cron`. @defaultValue 'UTC' */
  timezone?: string;
  /** The task to enqueue: a task (its payload schema is checked) or a task name. */
  task: AnyTask | string;
  /** The payload of every job (JSON). @defaultValue null */
  payload?: unknown;
  /** 1..200 characters, no NUL or lone UTF-16 surrogate. @defaultValue 'default' */
  queue?: string;
  /** @defaultValue 0 */
  priority?: number;
  /** @defaultValue the task's, else 3 */
  maxAttempts?: number;
  /** Per-attempt timeout in ms, 1..2147483647 (the largest Node timer). @defaultValue the task's, else none */
  timeout?: number;
  /**
   * Missed ticks (first seen more than 10 s after their time, `ON_TIME_GRACE_MS` (plan.ts)):
   * none, the latest only, or all of them (the most recent `catchUpLimit`). Ticks seen
   * within 10 s are on time and enqueued under every policy. @defaultValue 'latest'
   */
  catchUp?: CatchUp;
  /** Most missed ticks `all` enqueues at once, 1..10000. @defaultValue 100 */
  catchUpLimit?: number;
  /**
   * What a tick does while the previous run is still queued or running; see {@link Overlap}.
   * Ticks caught up at once (catchUp `all`) follow it too: under `skip` the oldest runs
   * and the others are recorded skipped. @defaultValue 'skip'
   */
  overlap?: Overlap;
}

/** A validated schedule definition, made by {@link defineSchedule}. */
export interface Schedule {
  readonly [SCHEDULE_BRAND]: true;
  readonly name: string;
  readonly cadence: ParsedCadence;
  readonly task: AnyTask | string;
  readonly payload: unknown;
  readonly options: Readonly<ScheduleOptions>;
}

/** A stored schedule as users read it. */
export interface ScheduleInfo {
  name: string;
  cron: string | null;
  every: number | null;
  timezone: string;
  /** e.g. "cron 0 9 * * 1-5 in America/New_York" */
  cadence: string;
  task: string;
  payload: Json;
  queue: string;
  priority: number;
  catchUp: CatchUp;
  catchUpLimit: number;
  overlap: Overlap;
  paused: boolean;
  /** The next tick to enqueue; null when the cadence never fires again. */
  nextRunAt: Date | null;
  /** The latest tick enqueued. */
  lastRunAt: Date | null;
  /** The worker that enqueued it. */
  lastWorker: string | null;
}

const optionsSchema = z
  .object({
    cron: z.string().optional(),
    every: z.number().optional(),
    timezone: z.string().optional(),
    task: z.union([z.string().regex(DEFINITION_NAME, 'must be a task name'), z.custom<AnyTask>(isTask, 'must be a task or a task name')]),
    payload: z.unknown().optional(),
    queue: storableString().min(1).max(200).optional(),
    priority: z.number().int().min(-1_000_000).max(1_000_000).optional(),
    maxAttempts: z.number().int().min(1).max(1000).optional(),
    timeout: z.number().int().positive().max(2_147_483_647).optional(),
    catchUp: z.enum(['none', 'latest', 'all']).optional(),
    catchUpLimit: z.number().int().min(1).max(10_000).optional(),
    overlap: z.enum(OVERLAP_POLICIES).optional(),
  })
  .strict();

/** True for values made by {@link defineSchedule}. */
export function isSchedule(value: unknown): value is Schedule {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[SCHEDULE_BRAND] === true;
}

/**
 * Defines a recurring schedule; declare it in a worker's `schedules` (upserted when
 * the worker starts) or store it with `baton.schedule`.
 * @throws ConfigError naming the problem: bad name or option, invalid cron, unknown
 *   time zone, non-JSON payload (a payload schema is checked when it is stored)
 */
export function defineSchedule(name: string, options: ScheduleOptions): Schedule {
  if (typeof name !== 'string' || !DEFINITION_NAME.test(name)) {
    throw new ConfigError(`schedule name ${JSON.stringify(name)} is invalid: 1-200 letters, digits and _ . : - /`);
  }
  parseConfig(optionsSchema, options, `schedule "${name}" option`);
  let cadence: ParsedCadence;
  try {
    cadence = parseCadence({ ...(options.cron !== undefined ? { cron: options.cron } : {}), ...(options.every !== undefined ? { every: options.every } : {}), ...(options.timezone !== undefined ? { timezone: options.timezone } : {}) }, { anchor: 0 });
  } catch (error) {
    throw new ConfigError(`schedule "${name}": ${(error as Error).message}`);
  }
  if (cadence.next(new Date()) === null) {
    throw new ConfigError(`schedule "${name}": ${cadence.describe()} never fires (no such date ahead)`);
  }
  try {
    serializeJson(options.payload ?? null, 'payload', DEFAULT_PAYLOAD_LIMIT);
  } catch (error) {
    throw new ConfigError(`schedule "${name}": ${(error as Error).message}`);
  }
  return { [SCHEDULE_BRAND]: true, name, cadence, task: options.task, payload: options.payload ?? null, options: { ...options } };
}

/** The cadence of a stored row. @throws ConfigError when the row holds an invalid cadence */
export function cadenceOf(row: Pick<ScheduleDefinitionRow, 'cron' | 'everyMs' | 'timezone'>): ParsedCadence {
  return parseCadence(row.cron !== null ? { cron: row.cron, timezone: row.timezone } : { every: row.everyMs!, timezone: row.timezone }, { anchor: 0 });
}

/** What the schedule functions need. */
export interface ScheduleDeps {
  store: Store;
  clock: Clock;
  payloadLimit: number;
}

/**
 * Stores `schedule` (an idempotent upsert, see Store.scheduleUpsert): a new schedule
 * or one whose cadence changed gets next run = the first tick after now; otherwise
 * the pending next run is kept, so re-declaring at every boot neither skips nor
 * doubles a tick (C16).
 * @throws ValidationError when the payload fails the task's schema; StoreError
 */
export async function upsertSchedule(deps: ScheduleDeps, schedule: Schedule): Promise<{ schedule: ScheduleInfo; created: boolean }> {
  const o = schedule.options;
  const task = isTask(schedule.task) ? schedule.task : undefined;
  const payload = task ? await validatePayload(task, schedule.payload) : schedule.payload;
  const row: ScheduleDefinitionRow = {
    name: schedule.name,
    cron: schedule.cadence.cron,
    everyMs: schedule.cadence.every,
    timezone: schedule.cadence.timezone,
    task: task ? task.name : (schedule.task as string),
    payload: serializeJson(payload, 'payload', deps.payloadLimit),
    queue: o.queue ?? 'default',
    priority: o.priority ?? 0,
    maxAttempts: o.maxAttempts ?? task?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    timeoutMs: o.timeout ?? task?.timeout ?? null,
    catchUp: o.catchUp ?? 'latest',
    catchUpLimit: o.catchUpLimit ?? 100,
    overlap: o.overlap ?? 'skip',
  };
  const now = deps.clock.now();
  const next = schedule.cadence.next(new Date(now));
  const result = await deps.store.scheduleUpsert({ schedule: row, nextRunAt: next ? next.getTime() : null, now });
  return { schedule: scheduleInfo(result.schedule), created: result.created };
}

/** The public view of a stored schedule. */
export function scheduleInfo(row: ScheduleRecord): ScheduleInfo {
  let cadence: string;
  try {
    cadence = cadenceOf(row).describe();
  } catch {
    cadence = row.cron ?? `every ${row.everyMs} ms`;
  }
  const date = (ms: number | null) => (ms === null ? null : new Date(ms));
  return {
    name: row.name,
    cron: row.cron,
    every: row.everyMs,
    timezone: row.timezone,
    cadence,
    task: row.task,
    payload: JSON.parse(row.payload) as Json,
    queue: row.queue,
    priority: row.priority,
    catchUp: row.catchUp,
    catchUpLimit: row.catchUpLimit,
    overlap: row.overlap,
    paused: row.paused,
    nextRunAt: date(row.nextRunAt),
    lastRunAt: date(row.lastRunAt),
    lastWorker: row.lastWorker,
  };
}

/** `baton.schedules`: manage stored schedules from any process. */
export interface ScheduleAdmin {
  list(): Promise<ScheduleInfo[]>;
  /** @throws NotFoundError */
  get(name: string): Promise<ScheduleInfo>;
  /** Stops enqueuing ticks until resumed. @throws NotFoundError */
  pause(name: string): Promise<void>;
  /** Ticks again from the first one after now (ticks during the pause are not caught up). @throws NotFoundError */
  resume(name: string): Promise<void>;
  /** Enqueues one job now (scheduledFor null); the next tick is unchanged. @throws NotFoundError */
  trigger(name: string): Promise<Job>;
  /** Deletes the schedule; its jobs stay. A worker declaring it in code stores it again at its next start. @throws NotFoundError */
  remove(name: string): Promise<void>;
}

/** Builds {@link ScheduleAdmin} over a store. */
export function scheduleAdmin(deps: ScheduleDeps): ScheduleAdmin {
  const missing = (name: unknown) => new NotFoundError(`no schedule named ${JSON.stringify(name)}`);
  /** A name no schedule can have is not found, without asking the store (a NUL would fail on PostgreSQL). */
  const named = (name: unknown): string => {
    if (typeof name !== 'string' || !DEFINITION_NAME.test(name)) throw missing(name);
    return name;
  };
  const get = async (name: string) => {
    const row = await deps.store.scheduleGet({ name: named(name) });
    if (!row) throw missing(name);
    return row;
  };
  return {
    list: async () => (await deps.store.scheduleList({})).map(scheduleInfo),
    get: async (name) => scheduleInfo(await get(name)),
    async pause(name) {
      if (!(await deps.store.scheduleSetPaused({ name: named(name), paused: true, nextRunAt: null, now: deps.clock.now() }))) throw missing(name);
    },
    async resume(name) {
      const row = await get(name);
      const now = deps.clock.now();
      const next = cadenceOf(row).next(new Date(now));
      if (!(await deps.store.scheduleSetPaused({ name, paused: false, nextRunAt: next ? next.getTime() : null, now }))) throw missing(name);
    },
    async trigger(name) {
      const job = await deps.store.scheduleTrigger({ name: named(name), now: deps.clock.now() });
      if (!job) throw missing(name);
      return job;
    },
    async remove(name) {
      if (!(await deps.store.scheduleRemove({ name: named(name) }))) throw missing(name);
    },
  };
}
