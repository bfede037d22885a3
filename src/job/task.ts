import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ConfigError } from '../errors.js';
import { DEFINITION_NAME, parseConfig, storableString, validateWith } from '../validation.js';
import * as z from 'zod';
import { backoffSchema, type Backoff } from './backoff.js';
import { keyConcurrencySchema, type KeyConcurrency } from './concurrency.js';
import { stateRetentionSchema, type StateRetention } from '../maintenance/retention.js';
import type { JobContext } from '../worker/context.js';
import { isQueue, type Queue } from '../flow/queue.js';

const TASK_BRAND = Symbol.for('baton.task');

/**
 * What `defineTask` takes. `Payload` (what the handler gets) is the schema's output
 * and `Input` (what `enqueue` takes) its input, when a schema is given: fields with
 * a default may be left out at enqueue; without a schema both are the same.
 */
export interface TaskOptions<Payload, Result, Input = Payload> {
  /** Standard Schema (zod, valibot, arktype…) the payload must satisfy at enqueue and at run. */
  schema?: StandardSchemaV1<Input, Payload>;
  /**
   * The queue of this task's jobs when the enqueue names none (enqueue's `queue` wins): a
   * name (1-200 characters), or a queue made by `defineQueue`, whose settings a worker
   * running this task then stores at start. A worker whose options name no `queues`
   * serves it. @defaultValue 'default'
   */
  queue?: string | Queue;
  /** Runs one attempt. Resolve to complete with a JSON result; throw to fail the attempt. */
  handler: (payload: Payload, ctx: JobContext) => Promise<Result> | Result;
  /** Attempts before `failed`, 1..1000. @defaultValue 3 */
  maxAttempts?: number;
  /** Per-attempt timeout in ms, 1..2147483647 (the largest Node timer). @defaultValue none */
  timeout?: number;
  /** Retry delay policy. @defaultValue {@link DEFAULT_BACKOFF} */
  backoff?: Backoff;
  /**
   * How long this task's finished jobs are kept, per state, in ms (false: forever),
   * in every queue; wins over the queue's and the worker's `retention`. Applied by
   * the pruner of the worker that runs this task. @defaultValue the queue's, else the worker's
   */
  retention?: StateRetention;
  /**
   * Per-key concurrency, fleet-wide: jobs of one queue with the same key (this
   * function of the payload, or the enqueue's `concurrencyKey`) run at most `limit` at
   * once, keys take turns, and `strategy` says what a new job of a busy key does.
   * @defaultValue none (a job enqueued with a `concurrencyKey` still takes turns, without a limit)
   */
  concurrency?: KeyConcurrency<Payload>;
}

/** A task: a name plus its handler. Create with {@link defineTask}. `Input` is what `enqueue` takes. */
export interface Task<Payload = unknown, Result = unknown, Input = Payload> {
  readonly [TASK_BRAND]: true;
  readonly name: string;
  readonly schema: StandardSchemaV1<Input, Payload> | undefined;
  /** The queue its jobs go to when the enqueue names none; undefined: 'default'. */
  readonly queue: string | undefined;
  /** The queue's definition when the task was given one (`defineQueue`). */
  readonly queueDefinition: Queue | undefined;
  readonly handler: (payload: Payload, ctx: JobContext) => Promise<Result> | Result;
  readonly maxAttempts: number | undefined;
  readonly timeout: number | undefined;
  readonly backoff: Backoff | undefined;
  readonly retention: StateRetention | undefined;
  readonly concurrency: KeyConcurrency<Payload> | undefined;
}

/** Any task, whatever its payload and result types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTask = Task<any, any, any>;
/** The payload type of a task: what its handler receives (its schema's output). */
export type PayloadOf<T> = T extends Task<infer P, any, any> ? P : never;
/** What `enqueue` takes for a task: its schema's input (defaults may be left out), else its payload type. */
export type InputOf<T> = T extends Task<any, any, infer I> ? I : never;
/** The result type of a task. */
export type ResultOf<T> = T extends Task<any, infer R, any> ? Awaited<R> : never;

const taskOptionsSchema = z.object({
  queue: z.union([storableString().min(1).max(200), z.custom<Queue>(isQueue)], 'must be a queue name (1-200 characters, no NUL or lone surrogate) or a queue made by defineQueue').optional(),
  maxAttempts: z.number().int().min(1).max(1000).optional(),
  timeout: z.number().int().positive().max(2_147_483_647).optional(),
  backoff: backoffSchema.optional(),
  retention: stateRetentionSchema.optional(),
  concurrency: keyConcurrencySchema.optional(),
});

/**
 * Defines a task. Payload and result types flow from here to `enqueue` and to the
 * handler.
 *
 * @example
 * export const resize = defineTask('resize', {
 *   schema: z.object({ url: z.string().url() }),
 *   handler: async ({ url }, ctx) => ({ bytes: 10 }),
 * });
 * @throws ConfigError on a bad name (1–200 of A–Z a–z 0–9 _ . : - /) or bad options
 */
export function defineTask<Payload = unknown, Result = unknown, Input = Payload>(
  name: string,
  options: TaskOptions<Payload, Result, Input>,
): Task<Payload, Result, Input> {
  if (typeof name !== 'string' || !DEFINITION_NAME.test(name)) {
    throw new ConfigError(`task name ${JSON.stringify(name)} is invalid: use 1-200 characters of A-Z a-z 0-9 _ . : - /`);
  }
  if (typeof options?.handler !== 'function') throw new ConfigError(`task "${name}": handler must be a function`);
  parseConfig(taskOptionsSchema, options, `task "${name}" option`);
  return Object.freeze({
    [TASK_BRAND]: true as const,
    name,
    schema: options.schema,
    queue: isQueue(options.queue) ? options.queue.name : options.queue,
    queueDefinition: isQueue(options.queue) ? options.queue : undefined,
    handler: options.handler,
    maxAttempts: options.maxAttempts,
    timeout: options.timeout,
    backoff: options.backoff,
    retention: options.retention,
    concurrency: options.concurrency ? Object.freeze({ ...options.concurrency }) : undefined,
  });
}

/** True when `value` was made by `defineTask` (any copy of the package). */
export function isTask(value: unknown): value is AnyTask {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TASK_BRAND] === true;
}

/**
 * Validates `payload` against the task's schema (when it has one).
 * @returns the schema's output value (it may coerce or default fields)
 * @throws ValidationError naming each bad field (paths in the payload, `subject` "payload")
 */
export async function validatePayload<P>(task: Task<P, unknown, unknown>, payload: unknown): Promise<P> {
  if (!task.schema) return payload as P;
  return validateWith(task.schema, payload, `invalid payload for task "${task.name}"`, { subject: 'payload' });
}

/**
 * Collects the tasks a module exports: its named exports that are tasks, and a
 * default export that is a task or an array of tasks.
 * @throws ConfigError when the module exports no task or two tasks share a name
 */
export function tasksFromModule(module: Record<string, unknown>, source: string): AnyTask[] {
  const found: AnyTask[] = [];
  for (const [exportName, value] of Object.entries(module)) {
    if (isTask(value)) found.push(value);
    else if (exportName === 'default' && Array.isArray(value)) found.push(...value.filter(isTask));
  }
  const unique = [...new Map(found.map((t) => [t, t])).values()];
  if (unique.length === 0) throw new ConfigError(`${source} exports no task (use defineTask and export it)`);
  const names = new Set<string>();
  for (const task of unique) {
    if (names.has(task.name)) throw new ConfigError(`${source} exports two tasks named "${task.name}"`);
    names.add(task.name);
  }
  return unique;
}
