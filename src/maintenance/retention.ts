/**
 * Retention settings: how long finished jobs are kept, per state, per queue and per
 * task, and how many a queue keeps at most. The pruner (pruner.ts) turns them into
 * delete rules. Ages are ms; a job is removed once its age (now − finishedAt) is
 * greater than its retention, i.e. when finishedAt < now − retention, at the next
 * pruning pass. `false` keeps forever.
 */
import * as z from 'zod';
import { stringProblems } from '../job/payload.js';
import type { FinishedState } from '../store/store.js';
import { MAX_DELETE_BATCH, MAX_KEEP } from '../store/delete-batch.js';

/** How long jobs of one state are kept after they finish: ms (0 = removed at the next pass), or false = forever. */
export type RetentionAge = number | false;

/** Retention per finished state; a state left out takes the next level's setting (task → queue → worker defaults). */
export interface StateRetention {
  /** @defaultValue 86400000 (1 day) at the worker level */
  completed?: RetentionAge;
  /** @defaultValue 604800000 (7 days) at the worker level: failures are read later and more carefully */
  failed?: RetentionAge;
  /** @defaultValue 86400000 (1 day) at the worker level */
  cancelled?: RetentionAge;
}

/** A queue's retention: ages per state, and a cap on the finished jobs it keeps. */
export interface QueueRetention extends StateRetention {
  /**
   * Keep at most this many finished jobs of the queue (every finished state
   * counts), the newest by finishedAt; the older ones are removed at the next
   * pass, whatever their age. 0..1000000. @defaultValue no cap
   */
  keep?: number;
}

/**
 * The worker option `retention`: defaults per state for every queue, overrides per
 * queue, and the pruner's pace. Tasks override per state with
 * `defineTask(name, { retention })`, which wins over the queue's, which wins over
 * these defaults.
 */
export interface RetentionOptions extends StateRetention {
  /** Per queue name. @defaultValue {} */
  queues?: Record<string, QueueRetention>;
  /** Time between two pruning passes of the fleet, ms. @defaultValue 60000 */
  interval?: number;
  /** Jobs deleted per statement (one short transaction each), 1..10000. @defaultValue 1000 */
  batchSize?: number;
}

/** The defaults per state, ms: completed and cancelled 1 day, failed 7 days. */
export const DEFAULT_RETENTION: Readonly<Record<FinishedState, number>> = Object.freeze({
  completed: 86_400_000,
  cancelled: 86_400_000,
  failed: 604_800_000,
});

/** The longest retention age accepted, ms: 10 years (use false to keep forever). */
export const MAX_RETENTION_MS = 315_360_000_000;

/** The finished states, in the order the pruner handles them. */
export const FINISHED_STATES: readonly FinishedState[] = ['completed', 'cancelled', 'failed'];

const age = z.custom<RetentionAge>(
  (v) => v === false || (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_RETENTION_MS),
  `must be false (keep forever) or an integer number of ms from 0 to ${MAX_RETENTION_MS} (10 years)`,
);
const states = { completed: age.optional(), failed: age.optional(), cancelled: age.optional() };

/** Zod schema of {@link StateRetention} (a task's `retention` option). */
export const stateRetentionSchema = z.object(states).strict();

/** Zod schema of {@link QueueRetention} (a queue's entry in `retention.queues`, and `defineQueue`'s `retention`). */
export const queueRetentionSchema = z
  .object({
    ...states,
    keep: z.number({ error: 'must be a number of jobs' }).int('must be an integer').min(0, 'must be at least 0').max(MAX_KEEP, `must be at most ${MAX_KEEP}`).optional(),
  })
  .strict();

const retentionObject = z
    .object({
      ...states,
      // Keys checked by the refinement below: a record's key schema is reported only as "Invalid key in record".
      queues: z
        .record(
          z.string(),
          queueRetentionSchema,
        )
        .superRefine((queues, ctx) => {
          for (const name of Object.keys(queues)) {
            const problems = [...(name.length < 1 || name.length > 200 ? ['a queue name has 1..200 characters'] : []), ...stringProblems(name, 'a queue name')];
            if (problems.length > 0) ctx.addIssue({ code: 'custom', path: [name], message: `not a queue name: ${problems.join('; ')}` });
          }
        })
        .optional(),
      interval: z.number({ error: 'must be a number of milliseconds' }).int('must be an integer (ms)').min(10, 'must be at least 10 ms').max(2_147_483_647, 'must be at most 2147483647 ms (the largest Node timer, about 24.8 days)').optional(),
      batchSize: z.number({ error: 'must be a number of jobs' }).int('must be an integer').min(1, 'must be at least 1').max(MAX_DELETE_BATCH, `must be at most ${MAX_DELETE_BATCH}`).optional(),
    })
    .strict();

/**
 * Zod schema of the worker option: {@link RetentionOptions} or false. (Not a zod
 * union: a union reports only "Invalid input", this names the bad field.)
 */
export const retentionOptionsSchema = z
  .custom<RetentionOptions | false>((v) => v === false || (typeof v === 'object' && v !== null && !Array.isArray(v)), 'must be false (this worker runs no pruner) or an object of retention settings')
  .transform((value, ctx) => {
    if (value === false) return value;
    const parsed = retentionObject.safeParse(value);
    if (parsed.success) return parsed.data as RetentionOptions;
    for (const issue of parsed.error.issues) ctx.issues.push({ code: 'custom', message: issue.message, path: issue.path, input: value });
    return z.NEVER;
  });

/**
 * The worker's retention with the retention of declared queues (`defineQueue`) added: a
 * queue's declared settings apply where the worker's `queues[name]` says nothing, state by state.
 */
export function withQueueRetention(options: RetentionOptions, queues: ReadonlyArray<{ name: string; retention?: QueueRetention | undefined }>): RetentionOptions {
  const declared = queues.filter((q) => q.retention !== undefined);
  if (declared.length === 0) return options;
  const merged: Record<string, QueueRetention> = { ...options.queues };
  for (const q of declared) merged[q.name] = { ...q.retention, ...options.queues?.[q.name] };
  return { ...options, queues: merged };
}

/** One age rule: delete jobs of `state` matching the scope whose age exceeds `maxAgeMs`. */
export interface AgeRule {
  state: FinishedState;
  maxAgeMs: number;
  queue?: string;
  task?: string;
  exceptQueues?: string[];
  exceptTasks?: string[];
}

/** One keep-N rule: the finished jobs of `queue` beyond its newest `keep`. */
export interface KeepRule {
  queue: string;
  keep: number;
}

/**
 * Turns settings into delete rules. Per state, the most specific setting wins: a
 * task's, else its queue's, else the worker default. So each task with its own age
 * gets a rule for its jobs in every queue; each queue with its own age a rule for
 * its jobs except those tasks'; the default a rule for the rest. A `false` age gives
 * no rule but still excludes its scope from the wider ones.
 * @param tasks - the tasks whose `retention` applies (name → their settings)
 */
export function pruneRules(options: RetentionOptions, tasks: ReadonlyArray<{ name: string; retention?: StateRetention | undefined }>): { age: AgeRule[]; keep: KeepRule[] } {
  const queues = Object.entries(options.queues ?? {});
  const age: AgeRule[] = [];
  for (const state of FINISHED_STATES) {
    const taskAges = tasks.filter((t) => t.retention?.[state] !== undefined).map((t) => [t.name, t.retention![state]!] as const);
    const queueAges = queues.filter(([, q]) => q[state] !== undefined).map(([name, q]) => [name, q[state]!] as const);
    const exceptTasks = taskAges.map(([name]) => name);
    const exceptQueues = queueAges.map(([name]) => name);
    const except = (list: string[], key: 'exceptTasks' | 'exceptQueues') => (list.length > 0 ? { [key]: list } : {});
    for (const [task, maxAgeMs] of taskAges) if (maxAgeMs !== false) age.push({ state, maxAgeMs, task });
    for (const [queue, maxAgeMs] of queueAges) if (maxAgeMs !== false) age.push({ state, maxAgeMs, queue, ...except(exceptTasks, 'exceptTasks') });
    const fallback = options[state] ?? DEFAULT_RETENTION[state];
    if (fallback !== false) age.push({ state, maxAgeMs: fallback, ...except(exceptQueues, 'exceptQueues'), ...except(exceptTasks, 'exceptTasks') });
  }
  const keep = queues.filter(([, q]) => q.keep !== undefined).map(([queue, q]) => ({ queue, keep: q.keep! }));
  return { age, keep };
}
