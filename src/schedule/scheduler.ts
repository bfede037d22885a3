import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Job } from '../job/types.js';
import type { EventSink } from '../observe/events.js';
import type { Tracing } from '../observe/tracing.js';
import { scheduleConcurrencyKey, type ConcurrencyStrategy } from '../job/concurrency.js';
import type { NewJob, ScheduleRecord, Store } from '../store/store.js';
import type { ParsedCadence } from './cron.js';
import { onTimeGrace, planTicks } from './plan.js';
import { cadenceOf, type Overlap } from './schedule.js';

/** Longest sleep between two looks at the schedules table, in ms (changes made elsewhere are seen this fast). */
export const SCHEDULER_MAX_SLEEP = 1000;
/** Due schedules handled per query. */
const BATCH = 100;

/** What the scheduler reports; the worker hosting it emits these among its own (WorkerEvents). */
export interface SchedulerEvents {
  /** This worker won a schedule's compare-and-set and enqueued these ticks' jobs (one per tick, oldest first). */
  'schedule:enqueued': { schedule: string; jobs: Job[]; scheduledFor: Date[] };
  /**
   * This worker found the schedule due but another instance advanced it first (the
   * compare-and-set failed): nothing was enqueued by this worker for `scheduledFor`.
   */
  'schedule:skipped': { schedule: string; scheduledFor: Date[] };
  /**
   * A tick found the schedule's previous run still queued or running under overlap
   * `skip`: its job (`job`, state `cancelled`, with the reason) records the skipped tick.
   */
  'schedule:overlapped': { schedule: string; scheduledFor: Date; job: Job };
  /** Ticks missed during downtime and not enqueued (catchUp none/latest, or beyond catchUpLimit). */
  'schedule:missed': { schedule: string; missed: number; from: Date; to: Date };
}

/** The concurrency strategy of each overlap policy but `allow` (schedule.ts, Overlap). */
const OVERLAP_STRATEGY = { skip: 'dropNewest', queue: 'keepLatest', cancelPrevious: 'cancelInProgress' } as const satisfies Record<Exclude<Overlap, 'allow'>, ConcurrencyStrategy>;

/** The concurrency key, limit and strategy a schedule's runs share under its overlap policy; none under `allow`. */
function overlapKey(schedule: ScheduleRecord): Pick<NewJob, 'concurrencyKey' | 'concurrencyLimit' | 'concurrencyStrategy'> {
  if (schedule.overlap === 'allow') return {};
  return { concurrencyKey: scheduleConcurrencyKey(schedule.name), concurrencyLimit: 1, concurrencyStrategy: OVERLAP_STRATEGY[schedule.overlap] };
}

/** What the scheduler needs from its worker. */
export interface SchedulerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  events: EventSink<SchedulerEvents>;
  workerId: string;
  /** A `schedule <name>` span per tick; its jobs carry its trace context. */
  tracing: Tracing;
  /** Called with every failed pass (the loop goes on). */
  onError(error: unknown): void;
}

/**
 * Enqueues due ticks of every stored, unpaused schedule, exactly once per tick
 * across any number of instances and with no leader: for each due schedule it
 * plans the ticks (catchUp, plan.ts) and calls `scheduleAdvance`, a compare-and-set
 * of the schedule's next run in the same transaction as the enqueue. An instance
 * that loses the race reports `schedule:skipped` and enqueued nothing.
 *
 * The loop wakes at the earliest stored next run, and at least every
 * {@link SCHEDULER_MAX_SLEEP} ms. Tests call `runOnce(now)`.
 */
export class Scheduler {
  readonly #deps: SchedulerDeps;
  readonly #cadences = new Map<string, { key: string; cadence: ParsedCadence }>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;
  /** When this scheduler's latest completed pass began (its `now`), ms since the epoch. */
  #previousPass: number | undefined;

  constructor(deps: SchedulerDeps) {
    this.#deps = deps;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#cycle();
  }

  /** Stops the loop and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /**
   * One pass: enqueues the due ticks of every due schedule at `now`.
   * @returns the earliest next run of any unpaused schedule afterwards, or null
   * @throws StoreError (the loop reports it through onError)
   */
  async runOnce(now = this.#deps.clock.now()): Promise<number | null> {
    const graceMs = onTimeGrace(now, this.#previousPass);
    for (;;) {
      const { due, earliest } = await this.#deps.store.scheduleDue({ now, limit: BATCH });
      for (const schedule of due) await this.#tick(schedule, now, graceMs);
      if (due.length < BATCH) {
        const next = due.length === 0 ? earliest : (await this.#deps.store.scheduleDue({ now, limit: 0 })).earliest;
        this.#previousPass = Math.max(now, this.#previousPass ?? now);
        return next;
      }
    }
  }

  async #cycle(): Promise<void> {
    if (this.#stopped) return;
    let earliest: number | null = null;
    this.#running = this.runOnce().then(
      (next) => void (earliest = next),
      (error: unknown) => this.#deps.onError(error),
    );
    await this.#running;
    this.#running = undefined;
    if (this.#stopped) return;
    const now = this.#deps.clock.now();
    const wait = earliest === null ? SCHEDULER_MAX_SLEEP : Math.min(SCHEDULER_MAX_SLEEP, Math.max(0, earliest - now));
    this.#timer = setTimeout(() => void this.#cycle(), wait);
    this.#timer.unref();
  }

  #cadence(schedule: ScheduleRecord): ParsedCadence {
    const key = `${schedule.cron}|${schedule.everyMs}|${schedule.timezone}`;
    const cached = this.#cadences.get(schedule.name);
    if (cached?.key === key) return cached.cadence;
    const cadence = cadenceOf(schedule);
    this.#cadences.set(schedule.name, { key, cadence });
    return cadence;
  }

  async #tick(schedule: ScheduleRecord, now: number, graceMs: number): Promise<void> {
    const { logger, events } = this.#deps;
    let cadence: ParsedCadence;
    try {
      cadence = this.#cadence(schedule);
    } catch (error) {
      logger.error({ err: error, schedule: schedule.name }, 'stored schedule has an invalid cadence; skipping it');
      return;
    }
    const expected = schedule.nextRunAt!;
    const plan = planTicks(cadence, expected, now, schedule.catchUp, schedule.catchUpLimit, graceMs);
    const jobs = plan.enqueue.map((tick) => ({
      queue: schedule.queue,
      task: schedule.task,
      payload: schedule.payload,
      priority: schedule.priority,
      runAt: tick,
      maxAttempts: schedule.maxAttempts,
      timeoutMs: schedule.timeoutMs,
      key: null,
      scheduledFor: tick,
      ...overlapKey(schedule),
    }));
    const span = this.#deps.tracing.scheduleTick(schedule);
    let result: Awaited<ReturnType<Store['scheduleAdvance']>>;
    try {
      result = await this.#deps.store.scheduleAdvance({
        name: schedule.name,
        expectedNextRunAt: expected,
        nextRunAt: plan.next,
        jobs: span.stamp(jobs),
        workerId: this.#deps.workerId,
        now,
      });
      span.set({ 'baton.schedule.advanced': result.advanced });
      span.written(result.jobs);
    } catch (error) {
      span.fail(error);
      throw error;
    } finally {
      span.end();
    }
    const ticks = plan.enqueue.map((t) => new Date(t));
    if (!result.advanced) {
      logger.debug({ schedule: schedule.name, ticks }, 'schedule tick taken by another instance; skipped');
      events.emit('schedule:skipped', { schedule: schedule.name, scheduledFor: ticks });
      return;
    }
    if (plan.missedRange) {
      logger.warn({ schedule: schedule.name, missed: plan.missed, catchUp: schedule.catchUp }, 'schedule ticks missed during downtime were not enqueued');
      events.emit('schedule:missed', {
        schedule: schedule.name,
        missed: plan.missed,
        from: new Date(plan.missedRange.from),
        to: new Date(plan.missedRange.to),
      });
    }
    if (result.jobs.length > 0) {
      logger.info({ schedule: schedule.name, jobs: result.jobs.map((j) => j.id) }, 'schedule ticks enqueued');
      events.emit('schedule:enqueued', { schedule: schedule.name, jobs: result.jobs, scheduledFor: result.jobs.map((j) => j.scheduledFor!) });
    }
    for (const job of result.jobs) {
      if (schedule.overlap !== 'skip' || job.state !== 'cancelled') continue;
      logger.info({ schedule: schedule.name, job: job.id, scheduledFor: job.scheduledFor }, 'schedule tick skipped: the previous run is still going (overlap skip)');
      events.emit('schedule:overlapped', { schedule: schedule.name, scheduledFor: job.scheduledFor!, job });
    }
  }
}
