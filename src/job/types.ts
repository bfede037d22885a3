/**
 * The job model shared by every part of Baton.
 *
 * States (stored):
 * ```
 *            enqueue
 *               │
 *   ┌────────► queued ──cancel──► cancelled
 *   │ retry /   │ claim              ▲
 *   │ release   ▼                    │ cancel (handler settles or grace passes)
 *   └──────── running ───────────────┘
 *              │    │
 *   completed ◄┘    └► failed (attempts exhausted, non-retryable, lease lost on the last attempt)
 * ```
 * Views derive `delayed` (queued, runAt in the future, attempt 0), `retrying`
 * (queued, attempt > 0) and `cancelling` (running with a cancel request).
 */

/** JSON values: what payloads, results and checkpoints may hold. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const JOB_STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
/** A stored job state. */
export type JobState = (typeof JOB_STATES)[number];
/** States a job never leaves. */
export const TERMINAL_STATES: readonly JobState[] = ['completed', 'failed', 'cancelled'];

/** `ctx.progress(current, total?, message?)` as stored. */
export interface Progress {
  current: number;
  total?: number;
  message?: string;
}

/** One failed attempt. `time` is when it failed. */
export interface JobError {
  attempt: number;
  time: Date;
  message: string;
  stack: string | null;
}

/** A job as users read it (SPEC "Jobs"). Times are Dates; ids are positive integers. */
export interface Job<Payload = Json, Result = Json> {
  id: number;
  queue: string;
  task: string;
  payload: Payload;
  state: JobState;
  priority: number;
  runAt: Date;
  attempt: number;
  maxAttempts: number;
  /** Per-attempt timeout in ms; null = none. */
  timeoutMs: number | null;
  key: string | null;
  progress: Progress | null;
  checkpoint: Json;
  result: Result | null;
  errors: JobError[];
  cancelRequestedAt: Date | null;
  cancelReason: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** The recurring schedule that enqueued it, else null. */
  scheduleName: string | null;
  /** The schedule tick it runs for; null for other jobs and for a schedule's "trigger now". */
  scheduledFor: Date | null;
  /** The concurrency key: at most `concurrencyLimit` jobs of this queue with it run at once, and keys take turns; null = none. */
  concurrencyKey: string | null;
  /** The most jobs of the queue with this job's key running at once, fleet-wide; null = no limit (turns only). */
  concurrencyLimit: number | null;
  /**
   * The W3C trace context of the enqueue that made the job (`traceparent`, and
   * `tracestate` when set), for the worker's run span to continue that trace
   * (OpenTelemetry, see docs/observability.md, "Tracing"); null when nothing was traced.
   */
  traceContext: Record<string, string> | null;
  /**
   * What a queued job waits for (a run suspended by `ctx.sleep`, `ctx.sleepUntil` or
   * `ctx.receive`: its view is `waiting`); null otherwise. Cleared when its next attempt ends.
   */
  wait: JobWait | null;
  /** The job whose run enqueued this one (`ctx.enqueueChild`); null for other jobs. */
  parentId: number | null;
}

/**
 * What a waiting job waits for: a time (`sleep`), a message on `topic` (`message`)
 * until `until` (the receive's timeout; {@link NEVER} when it has none), or child jobs.
 */
export type JobWait =
  | { kind: 'sleep'; until: Date }
  | { kind: 'message'; topic: string; until: Date }
  /** Children `ids` (`ctx.waitForChildren`, a child's `result()`): woken when they have all ended, or one failed or was cancelled. `until` is NEVER. */
  | { kind: 'children'; ids: number[]; until: Date };

/** The latest time a job can be due at: a wait with no end (a `receive` without a timeout) runs at it or when woken. 9999-12-31T23:59:59.999Z. */
export const NEVER = 253402300799999;

/**
 * The start of a stored value's text with its whole size: what job lists carry in place
 * of payloads, results, checkpoints and error messages, cut in the database so that a
 * large value never crosses the wire for a list. The whole value comes from `getJob`
 * (HTTP `GET /api/jobs/:id`, or `GET /api/jobs/:id/payload` and friends for the raw JSON).
 */
export interface Preview {
  /**
   * The first {@link PREVIEW_CHARS} characters (Unicode code points) of the text: for a
   * JSON value its JSON text as stored, for an error its message. The whole text when
   * `truncated` is false (a JSON value's text then parses with JSON.parse).
   */
  text: string;
  /** The whole text's size in bytes (UTF-8). */
  bytes: number;
  /** True when `text` is only the start of the text. */
  truncated: boolean;
}

/** The most characters a {@link Preview} holds. */
export const PREVIEW_CHARS = 200;

/** The last failed attempt of a job, as lists show it: its message previewed, no stack. */
export interface ErrorPreview {
  attempt: number;
  time: Date;
  message: Preview;
}

/**
 * A job as lists return it (`listJobs`, HTTP `GET /api/jobs`, `baton jobs`): every field
 * of {@link Job} but the four that may be large, which come as bounded previews. At most
 * about 1 kB of values per job, whatever their size.
 */
export interface JobSummary extends Omit<Job, 'payload' | 'result' | 'checkpoint' | 'errors'> {
  /** The payload's JSON text, previewed. */
  payloadPreview: Preview;
  /** The result's JSON text, previewed; null when the job has stored no result. */
  resultPreview: Preview | null;
  /** The checkpoint's JSON text, previewed; null when the job has none. */
  checkpointPreview: Preview | null;
  /** Failed attempts recorded (the length of the job's `errors`). */
  errorCount: number;
  /** The latest failed attempt; null when none failed. */
  lastError: ErrorPreview | null;
}

/** A job claimed by a worker, with the fencing token of this claim. */
export interface ClaimedJob extends Job {
  leaseToken: number;
}

/** Options of `enqueue` / `enqueueMany`. */
export interface EnqueueOptions {
  /** 1..200 characters, no NUL or lone UTF-16 surrogate. @defaultValue 'default' */
  queue?: string;
  /** Lower runs first. Integer -1000000..1000000. @defaultValue 0 */
  priority?: number;
  /**
   * Earliest start, within 1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z (a time
   * both drivers store exactly); outside it, a ValidationError naming `runAt`.
   * Mutually exclusive with `delay`. @defaultValue now
   */
  runAt?: Date;
  /**
   * Earliest start, in ms from now (integer >= 0); now + delay must not pass
   * 9999-12-31T23:59:59.999Z (else a ValidationError naming `delay`).
   */
  delay?: number;
  /** Attempts before `failed`, 1..1000. @defaultValue the task's, else 3 */
  maxAttempts?: number;
  /** Per-attempt timeout in ms, 1..2147483647 (the largest Node timer). @defaultValue the task's, else none */
  timeout?: number;
  /** Idempotency key, 1..500 characters, no NUL or lone UTF-16 surrogate: while a non-terminal job with this key exists, enqueue returns it. */
  key?: string;
  /**
   * Concurrency key, 1..500 characters (no NUL or lone UTF-16 surrogate): the queue's jobs
   * with one key share the task's `concurrency.limit` and take turns with other keys' jobs
   * at every claim. Wins over the task's `concurrency.key`. @defaultValue the task's, else none
   */
  concurrencyKey?: string;
  /**
   * Transactional enqueue (PostgreSQL): a node-postgres client inside the caller's
   * own transaction. The job exists only if that transaction commits, and workers
   * are woken at commit. The caller owns BEGIN/COMMIT and the client.
   */
  client?: TransactionClient;
}

/** What transactional enqueue needs of a database client: node-postgres' `query`. */
export interface TransactionClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}
