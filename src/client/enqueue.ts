import * as z from 'zod';
import { NotFoundError, PayloadTooLargeError, ValidationError } from '../errors.js';
import { serializeJson, stringProblems } from '../job/payload.js';
import { MAX_CONCURRENCY_KEY } from '../job/concurrency.js';
import { isTask, validatePayload, type AnyTask } from '../job/task.js';
import type { EnqueueOptions, Job, TransactionClient } from '../job/types.js';
import type { InsertedJob, NewJob } from '../store/store.js';
import { parseInput, storableString } from '../validation.js';
import type { ClientDeps } from './deps.js';

/** Attempts when neither the enqueue nor the task says. */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** The largest timer Node runs as asked (ms); a longer `timeout` would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;
/** The longest task name: defineTask's limit, so a job named longer could never run. */
const MAX_TASK_NAME = 200;

/**
 * The earliest `runAt` accepted: 1970-01-01T00:00:00.000Z (epoch ms 0). An earlier
 * time would mean "due now" anyway; the bound keeps every stored time a 4-digit year.
 */
export const MIN_RUN_AT = 0;
/**
 * The latest `runAt` accepted, and the latest `now + delay`: 9999-12-31T23:59:59.999Z
 * (epoch ms 253402300799999). Both drivers store every millisecond of 1970..9999
 * exactly (SQLite as integer ms, PostgreSQL as timestamptz, µs precision up to year
 * 294276), and every time in it prints as a plain ISO 8601 string with a 4-digit
 * year, which the HTTP API and the CLI read back. A larger time was stored as an
 * out-of-range value that no claim reached and that `Date` could not print.
 */
export const MAX_RUN_AT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const RANGE = `1970-01-01T00:00:00.000Z..${new Date(MAX_RUN_AT).toISOString()}`;

/**
 * A time every driver stores: a valid Date within {@link MIN_RUN_AT}..{@link MAX_RUN_AT}
 * (enqueue's `runAt`, the bulk filters' `createdBefore` and `finishedBefore`).
 */
export function storedTime() {
  return z
    .date({ error: (issue) => (issue.input instanceof Date ? 'is an invalid Date (its time is NaN)' : 'must be a Date') })
    .refine((d) => d.getTime() >= MIN_RUN_AT && d.getTime() <= MAX_RUN_AT, `must be within ${RANGE}`);
}

/**
 * The enqueue options, checked here once for every adapter: the HTTP API and the
 * CLI hand options through and report this schema's issues (paths relative to the
 * options, `subject` "options").
 */
const optionsSchema = z
  .object({
    queue: storableString().min(1).max(200).optional(),
    priority: z.number().int().min(-1_000_000).max(1_000_000).optional(),
    runAt: storedTime().optional(),
    delay: z.number().int().nonnegative().optional(),
    maxAttempts: z.number().int().min(1).max(1000).optional(),
    timeout: z.number().int().positive().max(MAX_TIMER_MS).optional(),
    key: storableString().min(1).max(500).optional(),
    concurrencyKey: storableString().min(1).max(MAX_CONCURRENCY_KEY).optional(),
    client: z.custom<TransactionClient>((v) => typeof v === 'object' && v !== null && typeof (v as TransactionClient).query === 'function', 'must be a node-postgres client').optional(),
  })
  .strict()
  .refine((o) => o.runAt === undefined || o.delay === undefined, { message: 'give runAt or delay, not both', path: ['delay'] });

/** One item of `enqueueMany`. */
export interface EnqueueItem {
  task: AnyTask | string;
  payload?: unknown;
  options?: EnqueueOptions;
}

/**
 * Checks and serializes one job: options, the task's schema (when the task is
 * known), JSON-only payload and size limit. Does no I/O to the store.
 * Refused (ValidationError): a `runAt`, or a `now + delay`, outside
 * {@link MIN_RUN_AT}..{@link MAX_RUN_AT} (1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z);
 * a task name, `queue` or `key` with a NUL or a lone UTF-16 surrogate (the payload's rule), a task name over 200 characters.
 * @throws ValidationError naming each bad field (`subject` "options": paths such as
 *   `["priority"]`; "payload": paths in the payload; none for the task name, path `["task"]`);
 *   NotFoundError for a task name the registry lacks
 */
export async function prepareJob(deps: ClientDeps, item: EnqueueItem): Promise<NewJob> {
  // No options (the common bulk item): the schema's output for {} is {}, no parse needed.
  const options: z.output<typeof optionsSchema> = item.options === undefined || item.options === null ? {}
    : parseInput(optionsSchema, item.options, 'invalid enqueue options', { subject: 'options' });
  const name = isTask(item.task) ? item.task.name : item.task;
  if (typeof name !== 'string' || name.length === 0) throw new ValidationError('task must be a task or a task name');
  const nameProblems = stringProblems(name, 'task name');
  if (name.length > MAX_TASK_NAME) nameProblems.push(`task name: at most ${MAX_TASK_NAME} characters, as defineTask allows (got ${name.length})`);
  if (nameProblems.length > 0) throw new ValidationError('invalid task name', nameProblems.map((message) => ({ path: ['task'], message })));
  const task = isTask(item.task) ? item.task : deps.tasks.get(name);
  if (!task && deps.tasks.size > 0) {
    throw new NotFoundError(`unknown task "${name}"; known tasks: ${[...deps.tasks.keys()].sort().join(', ')}`);
  }
  // JSON check first, so a non-JSON value never reaches a schema that might coerce it;
  // the schema's output (defaults, coercions) is what is stored, checked again.
  const raw = payloadJson(item.payload, deps.payloadLimit);
  const value = task?.schema ? await validatePayload(task, item.payload) : item.payload;
  const payload = task?.schema ? payloadJson(value, deps.payloadLimit) : raw;
  const concurrencyKey = options.concurrencyKey ?? keyOf(task, value);
  const now = deps.clock.now();
  if (options.delay !== undefined && now + options.delay > MAX_RUN_AT) {
    throw new ValidationError('invalid enqueue options', [{ path: ['delay'], message: `puts runAt after ${new Date(MAX_RUN_AT).toISOString()}, the latest time accepted (runAt must be within ${RANGE})` }], { subject: 'options' });
  }
  return {
    queue: options.queue ?? task?.queue ?? 'default',
    task: name,
    payload,
    priority: options.priority ?? 0,
    runAt: options.runAt ? options.runAt.getTime() : now + (options.delay ?? 0),
    maxAttempts: options.maxAttempts ?? task?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    timeoutMs: options.timeout ?? task?.timeout ?? null,
    key: options.key ?? null,
    concurrencyKey,
    concurrencyLimit: concurrencyKey === null ? null : task?.concurrency ? task.concurrency.limit ?? 1 : null,
    concurrencyStrategy: (concurrencyKey !== null && task?.concurrency?.strategy) || 'queue',
  };
}

/**
 * The concurrency key the task's `concurrency.key` gives the payload (the schema's
 * output), or null.
 * @throws ValidationError (subject "payload") when it throws or returns other than a
 *   string of 1..500 storable characters, null or undefined
 */
function keyOf(task: AnyTask | undefined, payload: unknown): string | null {
  const derive = task?.concurrency?.key;
  if (!derive) return null;
  let key: unknown;
  try {
    key = derive(payload);
  } catch (error) {
    throw new ValidationError(`task "${task.name}": concurrency.key threw: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (key === null || key === undefined) return null;
  const problems = typeof key !== 'string' ? [`must return a string, null or undefined (got ${typeof key})`]
    : [...stringProblems(key, 'key'), ...(key.length < 1 || key.length > MAX_CONCURRENCY_KEY ? [`must be 1..${MAX_CONCURRENCY_KEY} characters (got ${key.length})`] : [])];
  if (problems.length > 0) {
    throw new ValidationError(`task "${task.name}": invalid concurrency key from concurrency.key`, problems.map((message) => ({ path: ['concurrencyKey'], message })));
  }
  return key as string;
}

/**
 * Enqueues jobs in one transaction: all are written or none. Every item is
 * checked before anything is written. The write runs in an `enqueue <task>` span (a
 * child of the active span, when tracing: observe/tracing.ts) whose trace context
 * every job stores, so its runs join the trace. A task given by name that no live worker
 * registers is logged once per name (a warning; see unserved-task-warning.ts), never refused.
 * @param options.nameItems - prefix errors with "item N" @defaultValue true (`enqueue` of one job: false)
 * @param options.client - write inside this caller's transaction (PostgreSQL); no local
 *   `job:enqueued` event then, since the job exists only once the caller commits
 * @returns the jobs in input order; for a `key` already held by a non-terminal job, that job
 * @throws ValidationError / PayloadTooLargeError / NotFoundError (nothing written); StoreError
 */
export async function enqueueMany(deps: ClientDeps, items: EnqueueItem[], options: { nameItems?: boolean; client?: TransactionClient } = {}): Promise<Job[]> {
  if (!Array.isArray(items)) throw new ValidationError('enqueueMany takes an array of { task, payload, options }');
  const prepared: NewJob[] = [];
  for (const [index, item] of items.entries()) {
    try {
      prepared.push(await prepareJob(deps, item));
    } catch (error) {
      throw options.nameItems === false ? error : atItem(error, index);
    }
  }
  if (prepared.length === 0) return [];
  const client = options.client;
  const span = deps.tracing.enqueue(prepared);
  try {
    const inserted = await deps.store.jobInsertMany({ jobs: span.stamp(prepared), now: deps.clock.now(), ...(client ? { client } : {}) });
    const jobs = inserted.map((i) => i.job);
    span.written(jobs);
    if (!client) announceEnqueued(deps, inserted);
    for (const item of items) if (typeof item.task === 'string') deps.noteTaskByName(item.task);
    return jobs;
  } catch (error) {
    span.fail(error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Checks and serializes one job now, for an insert that comes later with a job's
 * completion (`ctx.enqueueOnComplete`, in the completion's transaction): as
 * {@link prepareJob}, stamped with the trace context of an `enqueue <task>` span
 * (attribute `baton.on_complete`), which ends at once. Nothing is written.
 * @throws as prepareJob
 */
export async function prepareDeferred(deps: ClientDeps, item: EnqueueItem): Promise<NewJob> {
  const job = await prepareJob(deps, item);
  const span = deps.tracing.enqueue([job]);
  span.set({ 'baton.on_complete': true });
  const [stamped] = span.stamp([job]);
  span.end();
  return stamped!;
}

/** Emits this process's `job:enqueued` for each job `inserted` created (a key already held created none). */
export function announceEnqueued(deps: ClientDeps, inserted: InsertedJob[]): void {
  for (const { job, created } of inserted) if (created) deps.events.emit('job:enqueued', { job });
}

/** The payload as JSON text; its issues (NUL, lone surrogate, not JSON) have `subject` "payload". */
function payloadJson(value: unknown, limit: number): string {
  try {
    return serializeJson(value, 'payload', limit);
  } catch (error) {
    if (error instanceof ValidationError && error.code === 'validation' && error.subject === undefined) throw new ValidationError(error.summary, error.issues, { subject: 'payload' });
    throw error;
  }
}

/** The same error with "item N" in front of its message, keeping its class and code. */
function atItem(error: unknown, index: number): unknown {
  if (error instanceof PayloadTooLargeError) return new PayloadTooLargeError(`item ${index} ${error.what}`, error.bytes, error.limit);
  if (error instanceof ValidationError) return new ValidationError(`item ${index}: ${error.summary}`, error.issues, error.subject === undefined ? {} : { subject: error.subject });
  if (error instanceof NotFoundError) return new NotFoundError(`item ${index}: ${error.message}`);
  return error;
}
