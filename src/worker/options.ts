import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { ConfigError } from '../errors.js';
import { parseConfig, storableString } from '../validation.js';
import { isTask, type AnyTask } from '../job/task.js';
import { isService, type Service } from '../lease/service.js';
import { isSchedule, type Schedule } from '../schedule/schedule.js';
import { retentionOptionsSchema, type RetentionOptions } from '../maintenance/retention.js';
import { PRUNER_SERVICE } from '../maintenance/pruner.js';

const ms = (min = 1) =>
  z
    .number({ error: 'must be a number of milliseconds' })
    .int('must be an integer (ms)')
    .min(min, `must be at least ${min} ms`)
    .max(2_147_483_647, 'must be at most 2147483647 ms (2^31 - 1, Node\'s timer limit)');

const queueNameSchema = storableString().min(1, 'must not be empty (a queue name has 1-200 characters)').max(200, 'must be at most 200 characters (a queue name has 1-200)');
const queueList = z
  .array(queueNameSchema)
  .min(1, 'must name at least one queue')
  .check((ctx) => {
    const twice = ctx.value.find((name, i) => ctx.value.indexOf(name) !== i);
    if (twice !== undefined) ctx.issues.push({ code: 'custom', message: `names queue ${JSON.stringify(twice)} twice`, input: ctx.value });
  });
/** The most slots of one queue in one worker (the worker's own `concurrency` bound). */
const MAX_SLOTS = 10_000;
const queueSlotsSchema = z
  .record(z.string(), z.number({ error: 'must be a number of slots' }).int('must be an integer (slots)').min(1, 'must be at least 1 (slots)').max(MAX_SLOTS, `must be at most ${MAX_SLOTS} (slots)`))
  .superRefine((record, ctx) => {
    if (Object.keys(record).length === 0) ctx.addIssue({ code: 'custom', message: 'must name at least one queue' });
    // Keys checked here: a record's key schema is reported only as "Invalid key in record".
    for (const name of Object.keys(record)) {
      const key = queueNameSchema.safeParse(name);
      if (!key.success) ctx.addIssue({ code: 'custom', path: [name], message: `not a queue name: ${key.error.issues.map((i) => i.message).join('; ')}` });
    }
  });

/** An array of names or a record of slots (not a zod union: a union reports only "Invalid input", this names the bad entry). */
const queuesSchema = z
  .custom<string[] | Record<string, number>>((v) => typeof v === 'object' && v !== null, 'must be an array of queue names, or a record of queue name → slots (e.g. { emails: 10, reports: 2 })')
  .transform((value, ctx) => {
    const parsed = (Array.isArray(value) ? queueList : queueSlotsSchema).safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.issues.push({ code: 'custom', message: issue.message, path: issue.path, input: value });
    return z.NEVER;
  });

const schema = z
  .object({
    tasks: z.array(z.custom<AnyTask>(isTask, 'must be tasks made by defineTask')),
    services: z.array(z.custom<Service>(isService, 'must be services made by defineService')).optional(),
    schedules: z.array(z.custom<Schedule>(isSchedule, 'must be schedules made by defineSchedule')).optional(),
    scheduler: z.boolean().optional(),
    queues: queuesSchema.optional(),
    concurrency: z.number().int().min(1).max(MAX_SLOTS).optional(),
    prefetch: z.number().int().min(0).max(10_000).optional(),
    pollInterval: ms(10).optional(),
    watchInterval: ms(10).optional(),
    cancelPollInterval: ms(10).optional(),
    leaseTtl: ms(100).optional(),
    heartbeatInterval: ms(10).optional(),
    rescueInterval: ms(10).optional(),
    drainTimeout: ms(0).optional(),
    abortGrace: ms(0).optional(),
    cancelGrace: ms(0).optional(),
    progressInterval: ms(0).optional(),
    retention: retentionOptionsSchema.optional(),
    workerId: z.string().min(1).max(200).optional(),
    quiet: z.boolean().optional(),
    logger: z.custom<Logger>((v) => typeof v === 'object' && v !== null && typeof (v as Logger).child === 'function').optional(),
    clock: z.custom<Clock>((v) => typeof v === 'object' && v !== null && typeof (v as Clock).now === 'function').optional(),
  })
  .strict();

/** Options of `baton.worker(…)`. Durations are ms; `undefined` means the default. */
export interface WorkerOptions {
  /** The tasks this worker runs; it claims only these. May be empty when it has services or schedules. */
  tasks: AnyTask[];
  /** Services this worker runs (on whichever worker holds each one's lease). @defaultValue [] */
  services?: Service[];
  /**
   * Schedules declared in code: stored (idempotent upsert) when the worker starts.
   * Giving any turns the scheduler on. @defaultValue []
   */
  schedules?: Schedule[];
  /**
   * Enqueue the due ticks of every stored schedule (exactly once per tick across
   * instances, whichever tick). @defaultValue true when `schedules` is given, else false
   */
  scheduler?: boolean;
  /**
   * Queues to claim from, each 1-200 characters (as `enqueue`'s `queue`) with no NUL or
   * lone UTF-16 surrogate; ConfigError otherwise. Either:
   * - an array of names (at least one, none twice): one pool of `concurrency` slots
   *   serves them all;
   * - a record of name → slots (1..10000), e.g. `{ emails: 10, reports: 2 }`: each queue
   *   runs at most its slots at once in this worker (as River's per-queue MaxWorkers,
   *   Oban's queue limits), and `concurrency` caps their sum (default: the sum). A
   *   queue with free slots is claimed from even while another is full, so long jobs
   *   of one queue never take the slots of another.
   * @defaultValue 'default' plus the queue of each task that names one (`defineTask`'s `queue`), one pool
   */
  queues?: string[] | Record<string, number>;
  /**
   * Jobs run at once, 1..10000. With per-queue slots (`queues` as a record) the total
   * over every queue. @defaultValue 10; with per-queue slots, their sum
   */
  concurrency?: number;
  /**
   * Jobs claimed ahead of a free slot, 0..10000: each claim takes up to this many more
   * than the free slots, and they start the moment a slot frees, with no round trip to
   * the database in between; the claim that refills them writes the completions of the
   * jobs that ended (one statement per cycle carries more jobs). A job claimed ahead is
   * `running` in the database under this worker's lease (renewed by the heartbeat) from
   * its claim: its attempt is counted and its start time set then, it counts toward
   * queue and key limits and rate limits, and no other worker can take it. A cancel
   * ends it `cancelled` without running its handler; `stop()` releases it at once
   * (attempt not counted). For short jobs where throughput matters, as
   * graphile-worker's `localQueue`; leave it 0 for long jobs, limited queues, or a
   * fleet that should share work evenly. @defaultValue 0
   */
  prefetch?: number;
  /** Safety-net poll for due jobs (delayed jobs, missed wake-ups). @defaultValue 1000 */
  pollInterval?: number;
  /** How often to look for changes committed by other processes (wake-ups, cancels); on SQLite one `PRAGMA data_version` read. @defaultValue 10 */
  watchInterval?: number;
  /** How often running jobs' cancel flags are read, as a fallback to the watch. @defaultValue 200 */
  cancelPollInterval?: number;
  /** Lease length; a job whose worker stops heartbeating is claimable this long after the last heartbeat. @defaultValue 30000 */
  leaseTtl?: number;
  /** Lease renewal period; must be below leaseTtl. @defaultValue leaseTtl / 3 */
  heartbeatInterval?: number;
  /** How often expired leases are looked for. @defaultValue 1000 */
  rescueInterval?: number;
  /** Shutdown: time running jobs get to finish before their signals abort. @defaultValue 20000 */
  drainTimeout?: number;
  /** Shutdown and timeout: time an aborted handler gets to clean up and checkpoint. @defaultValue 5000 */
  abortGrace?: number;
  /** Cancel: time a cancelled handler gets before the job is recorded cancelled anyway. @defaultValue 5000 */
  cancelGrace?: number;
  /** Minimum time between two progress writes of one job. @defaultValue 250 */
  progressInterval?: number;
  /**
   * Retention of finished jobs (docs/operations.md, "Retention"): ages per state (ms, false =
   * forever), per queue (`queues`, with `keep` = at most N finished jobs), the pass
   * `interval` and `batchSize`. This worker hosts the pruner service, which one
   * worker of the fleet at a time runs with its own settings; `false` = this worker
   * never prunes. @defaultValue {} (completed and cancelled 1 day, failed 7 days, every 60 s)
   */
  retention?: RetentionOptions | false;
  /** Lease owner name. @defaultValue "host:pid:random" */
  workerId?: string;
  /**
   * The worker logs one line per job outcome (observe/log-job-outcomes.ts): at info for
   * completed, cancelled, released and snoozed jobs, at warn with the error's message for
   * a failed attempt. true leaves out the line of each completed job (`baton worker --quiet`).
   * @defaultValue false
   */
  quiet?: boolean;
  /** @defaultValue the Baton's logger */
  logger?: Logger;
  /** @defaultValue the Baton's clock */
  clock?: Clock;
}

/** WorkerOptions with every default applied. */
export type ResolvedWorkerOptions = Required<Omit<WorkerOptions, 'logger' | 'clock' | 'queues'>> & {
  /** The queues served, in the order given (a record's keys). */
  queues: string[];
  /** Slots per queue when `queues` was a record; null: one pool of `concurrency` serves every queue. */
  queueSlots: Readonly<Record<string, number>> | null;
};

/**
 * Validates options and applies defaults.
 * @throws ConfigError naming the option (0, negative, NaN, strings… are refused; undefined is the default)
 */
export function resolveWorkerOptions(options: WorkerOptions): ResolvedWorkerOptions {
  const o = parseConfig(schema, options, 'worker option');
  const leaseTtl = o.leaseTtl ?? 30_000;
  const heartbeatInterval = o.heartbeatInterval ?? Math.floor(leaseTtl / 3);
  if (heartbeatInterval >= leaseTtl) {
    throw new ConfigError(`worker option heartbeatInterval (${heartbeatInterval} ms) must be below leaseTtl (${leaseTtl} ms)`);
  }
  const services = o.services ?? [];
  const schedules = o.schedules ?? [];
  if (o.tasks.length === 0 && services.length === 0 && schedules.length === 0 && !o.scheduler) {
    throw new ConfigError('worker option tasks: give at least one task (or services, schedules or scheduler: true)');
  }
  for (const [what, list] of [['services', services], ['schedules', schedules]] as const) {
    const seen = new Set<string>();
    for (const item of list) {
      if (seen.has(item.name)) throw new ConfigError(`worker option ${what}: two are named "${item.name}"`);
      seen.add(item.name);
    }
  }
  if (o.retention !== false && services.some((s) => s.name === PRUNER_SERVICE)) {
    throw new ConfigError(`worker option services: "${PRUNER_SERVICE}" is the built-in pruner's name; give your service another one`);
  }
  const names = new Set<string>();
  for (const task of o.tasks) {
    if (names.has(task.name)) throw new ConfigError(`worker option tasks: two tasks are named "${task.name}"`);
    names.add(task.name);
  }
  const queueSlots = o.queues === undefined || Array.isArray(o.queues) ? null : Object.freeze({ ...o.queues });
  return {
    tasks: o.tasks,
    services,
    schedules,
    scheduler: o.scheduler ?? schedules.length > 0,
    queues: queueSlots ? Object.keys(queueSlots) : o.queues as string[] | undefined ?? defaultQueues(o.tasks),
    queueSlots,
    concurrency: o.concurrency ?? (queueSlots ? Math.min(MAX_SLOTS, Object.values(queueSlots).reduce((a, b) => a + b, 0)) : 10),
    prefetch: o.prefetch ?? 0,
    pollInterval: o.pollInterval ?? 1000,
    watchInterval: o.watchInterval ?? 10,
    cancelPollInterval: o.cancelPollInterval ?? 200,
    leaseTtl,
    heartbeatInterval,
    rescueInterval: o.rescueInterval ?? 1000,
    drainTimeout: o.drainTimeout ?? 20_000,
    abortGrace: o.abortGrace ?? 5000,
    cancelGrace: o.cancelGrace ?? 5000,
    progressInterval: o.progressInterval ?? 250,
    retention: o.retention ?? {},
    workerId: o.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    quiet: o.quiet ?? false,
  };
}

/** The queues a worker serves when its options name none: 'default', then each task's own queue (defineTask's `queue`), once each. */
function defaultQueues(tasks: readonly AnyTask[]): string[] {
  return [...new Set(['default', ...tasks.flatMap((task) => (task.queue === undefined ? [] : [task.queue]))])];
}
