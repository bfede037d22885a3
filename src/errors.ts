/**
 * Error classes. Every error Baton throws is a `BatonError` with a string `code`
 * (the HTTP layer maps codes to statuses).
 *
 * `instanceof` works across two copies of the package (two installed versions, or
 * one module loaded twice): each class is branded once by {@link brand} with a
 * registry symbol, `Symbol.for('baton-jobs.<ClassName>')`, set on its prototype, and
 * `BatonError[Symbol.hasInstance]` (inherited by every subclass) checks that symbol
 * instead of the prototype chain. Subclass instances inherit their parents' brands
 * through their prototype, so a CancelledError of one copy is an AbortReason and a
 * BatonError of the other. A plain Error whose `name` says "CancelledError" carries
 * no brand and is not one. This is the Temporal SDK's approach; names are never
 * compared (a minifier may rename classes).
 */

/** Static key under which a branded class keeps its own brand symbol. */
const BRAND_OF = Symbol.for('baton-jobs.brandOf');

/** The brand symbol of `cls` when `cls` itself was branded (not inherited from a parent). */
function ownBrand(cls: object): symbol | undefined {
  return Object.prototype.hasOwnProperty.call(cls, BRAND_OF) ? (cls as { [BRAND_OF]: symbol })[BRAND_OF] : undefined;
}

/**
 * Brands `cls` once: `Symbol.for('baton-jobs.<name>')` on its prototype (instances
 * inherit it), the same symbol as the class's own static brand, and `name` on the
 * prototype, so `error.name` is right even when a bundler renames the class.
 * @param name - the class's public name, e.g. "CancelledError" (a literal: never `cls.name`)
 */
export function brand(cls: abstract new (...args: never[]) => Error, name: string): void {
  const symbol = Symbol.for(`baton-jobs.${name}`);
  Object.defineProperty(cls.prototype, symbol, { value: true, enumerable: false });
  Object.defineProperty(cls.prototype, 'name', { value: name, enumerable: false, writable: true, configurable: true });
  Object.defineProperty(cls, BRAND_OF, { value: symbol, enumerable: false });
}

/** Base class of every error Baton throws. `code` is stable and machine-readable. */
export class BatonError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    // A user's own subclass is not branded: it keeps its class name.
    if (ownBrand(new.target) === undefined) this.name = new.target.name;
  }

  /**
   * `value instanceof X` for X a branded class (this one or a Baton subclass): true
   * when `value` carries X's brand, whichever copy of the package made it. For a
   * user's own subclass (not branded), the ordinary prototype-chain check.
   */
  static override [Symbol.hasInstance](this: abstract new (...args: never[]) => unknown, value: unknown): boolean {
    const symbol = ownBrand(this);
    if (symbol === undefined) return Function.prototype[Symbol.hasInstance].call(this, value);
    return (typeof value === 'object' || typeof value === 'function') && value !== null && (value as Record<symbol, unknown>)[symbol] === true;
  }
}
brand(BatonError, 'BatonError');

/** One problem found in a value: `path` names the field (e.g. `["user", "email"]`). */
export interface ValidationIssue {
  path: (string | number)[];
  message: string;
}

/** Which argument a ValidationError's issue paths start from. */
export type ValidationSubject = 'payload' | 'options' | 'filter';

/**
 * A payload, option or argument was refused. `issues` names each bad field, with
 * paths relative to `subject` when there is one (`["priority"]` in the enqueue
 * options; an adapter such as the HTTP API puts its own prefix in front).
 */
export class ValidationError extends BatonError {
  readonly issues: ValidationIssue[];
  /** The message without the list of issues, e.g. `invalid payload for task "signup"`. */
  readonly summary: string;
  /**
   * Which argument the issue paths start from: `"payload"` or `"options"` for
   * enqueue, `"filter"` or `"options"` for the bulk operations; undefined when the
   * message alone says what was refused.
   */
  readonly subject: ValidationSubject | undefined;
  constructor(message: string, issues: ValidationIssue[] = [], options: { subject?: ValidationSubject } = {}) {
    super('validation', issues.length ? `${message}: ${formatIssues(issues)}` : message);
    this.issues = issues;
    this.summary = message;
    this.subject = options.subject;
  }
}
brand(ValidationError, 'ValidationError');

/** The payload or result is over the configured size limit (bytes). */
export class PayloadTooLargeError extends ValidationError {
  /** What was too large, e.g. "payload", "item 2 payload", "result". */
  readonly what: string;
  /** Serialized size (UTF-8 bytes) and the limit it exceeded. */
  readonly bytes: number;
  readonly limit: number;
  constructor(what: string, bytes: number, limit: number) {
    super(`${what} is ${bytes} bytes, over the limit of ${limit} bytes`);
    this.what = what;
    this.bytes = bytes;
    this.limit = limit;
    (this as { code: string }).code = 'payload_too_large';
  }
}
brand(PayloadTooLargeError, 'PayloadTooLargeError');

/** No job (or task) with that name or id. */
export class NotFoundError extends BatonError {
  constructor(message: string) {
    super('not_found', message);
  }
}
brand(NotFoundError, 'NotFoundError');

/** The request conflicts with the current state, e.g. cancelling a completed job. */
export class ConflictError extends BatonError {
  readonly state: string | undefined;
  constructor(message: string, state?: string) {
    super('conflict', message);
    this.state = state;
  }
}
brand(ConflictError, 'ConflictError');

/**
 * A configuration value is invalid; the message names the option. `issues`: each bad
 * option's path and message, when a schema found them (`parseConfig`); empty for a
 * check written by hand (two options that contradict each other, a missing driver).
 */
export class ConfigError extends BatonError {
  readonly issues: ValidationIssue[];
  constructor(message: string, issues: ValidationIssue[] = []) {
    super('config', message);
    this.issues = issues;
  }
}
brand(ConfigError, 'ConfigError');

/** The database could not be reached or refused a statement. `op` names the Store method. */
export class StoreError extends BatonError {
  readonly op: string;
  /** @param message - @defaultValue `store operation <op> failed: <cause>` */
  constructor(op: string, cause: unknown, message = `store operation ${op} failed: ${describeError(cause)}`) {
    super('store', message, { cause });
    this.op = op;
  }
}
brand(StoreError, 'StoreError');

/**
 * `withLock` found the lock held by another owner (and was told not to wait, or its
 * wait timed out). `holder` and `until` say who holds it and until when its lease runs.
 */
export class LockBusyError extends BatonError {
  readonly lock: string;
  readonly holder: string;
  readonly until: Date;
  constructor(lock: string, holder: string, until: Date, waitedMs?: number) {
    const waited = waitedMs === undefined ? '' : ` (waited ${waitedMs} ms)`;
    super('lock_busy', `lock "${lock}" is held by ${holder} until ${until.toISOString()}${waited}`);
    this.lock = lock;
    this.holder = holder;
    this.until = until;
  }
}
brand(LockBusyError, 'LockBusyError');

/** Thrown by a handler to fail the job at once, without further attempts. */
export class NonRetryableError extends BatonError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('non_retryable', message, options);
  }
}
brand(NonRetryableError, 'NonRetryableError');

/** The longest snooze, ms: the largest Node timer, as for `timeout` (about 24.8 days). */
export const MAX_SNOOZE_MS = 2_147_483_647;

/**
 * Thrown by a handler (or by `ctx.snooze(ms)`) to put the job back to `queued` for
 * `delayMs` without counting the attempt: the checkpoint is kept and the job runs
 * again, on any worker, once the delay has passed (River's JobSnooze). A job whose
 * cancel was requested meanwhile ends `cancelled` instead.
 * @throws ValidationError when `delayMs` is not an integer 0..{@link MAX_SNOOZE_MS}
 */
export class SnoozeError extends BatonError {
  /** How long the job waits before it is due again, ms. */
  readonly delayMs: number;
  constructor(delayMs: number, message = `job snoozed for ${delayMs} ms`, code = 'snoozed') {
    if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > MAX_SNOOZE_MS) {
      throw new ValidationError(`snooze delay must be an integer number of ms, 0..${MAX_SNOOZE_MS}; got ${String(delayMs)}`, [
        { path: ['delayMs'], message: `must be an integer 0..${MAX_SNOOZE_MS}` },
      ]);
    }
    super(code, message);
    this.delayMs = delayMs;
  }
}
brand(SnoozeError, 'SnoozeError');

/**
 * A SnoozeError for a handler whose call was refused for its rate (an HTTP 429):
 * `throw new RateLimitedError(retryAfterMs)` re-queues the job for that long, attempt
 * not counted (BullMQ's RateLimitError; River's JobSnooze).
 * @throws ValidationError when `retryAfterMs` is not an integer 0..{@link MAX_SNOOZE_MS}
 */
export class RateLimitedError extends SnoozeError {
  constructor(retryAfterMs: number, message = `rate limited: retry after ${retryAfterMs} ms`) {
    super(retryAfterMs, message, 'rate_limited');
  }

  /** The same as `delayMs`: how long until the job is due again, ms. */
  get retryAfterMs(): number {
    return this.delayMs;
  }
}
brand(RateLimitedError, 'RateLimitedError');

/**
 * Base of the four reasons a job's `ctx.signal` fires with (`signal.reason`):
 * CancelledError, ShutdownError, TimeoutError, LeaseLostError.
 */
export class AbortReason extends BatonError {
  constructor(code: string, message: string) {
    super(code, message);
  }
}
brand(AbortReason, 'AbortReason');

/** The job was cancelled (`cancel(id, reason)` from any process). `reason` is the caller's text. */
export class CancelledError extends AbortReason {
  readonly reason: string | null;
  constructor(reason: string | null = null) {
    super('cancelled', reason ? `job cancelled: ${reason}` : 'job cancelled');
    this.reason = reason;
  }
}
brand(CancelledError, 'CancelledError');

/** The worker is shutting down; the job will be released and resumed elsewhere. */
export class ShutdownError extends AbortReason {
  constructor() {
    super('shutdown', 'worker shutting down; the job will be released to another worker');
  }
}
brand(ShutdownError, 'ShutdownError');

/** The attempt ran past its timeout (ms). */
export class TimeoutError extends AbortReason {
  readonly timeoutMs: number;
  /** @param message - @defaultValue `job timed out after <timeoutMs> ms` (a step's timeout names its step) */
  constructor(timeoutMs: number, message = `job timed out after ${timeoutMs} ms`) {
    super('timeout', message);
    this.timeoutMs = timeoutMs;
  }
}
brand(TimeoutError, 'TimeoutError');

/** The worker lost the job's lease (another worker took it over); its writes are dropped. */
export class LeaseLostError extends AbortReason {
  constructor(message = 'lease lost: another worker owns this job now') {
    super('lease_lost', message);
  }
}
brand(LeaseLostError, 'LeaseLostError');

/** "path: message; path: message" */
export function formatIssues(issues: ValidationIssue[]): string {
  return issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
}

/**
 * Describes anything thrown as a readable one-line message, never throwing itself
 * (a `message` getter that throws, `throw undefined`, `Promise.reject({code: 1})`).
 */
export function describeError(value: unknown): string {
  try {
    if (value instanceof Error) {
      const message = String(value.message);
      return message || value.name || 'Error';
    }
    if (typeof value === 'string') return `non-Error thrown: ${JSON.stringify(value)}`;
    if (value === undefined || value === null || typeof value !== 'object') return `non-Error thrown: ${String(value)}`;
    return `non-Error thrown: ${safeJson(value)}`;
  } catch {
    return value instanceof Error ? 'Error thrown; its message could not be read' : 'non-Error thrown: (unreadable value)';
  }
}

/**
 * Longest error message and stack a failed attempt stores (characters): a handler's error
 * is text Baton stores and serves (job pages, `GET /api/jobs/:id`), so one thrown with
 * megabytes of message cannot bloat every answer that carries the job. Chosen to keep any
 * real message and a stack of ~100 frames whole.
 */
export const STORED_TEXT_LIMITS = { message: 8_192, stack: 16_384, progressMessage: 1_024 } as const;

/**
 * `text` cut to at most `limit` characters (plus a note of how many were left out), or
 * `text` itself when it fits.
 */
export function truncateText(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more characters)`;
}

/** The stack of an Error, or null; never throws. */
export function describeStack(value: unknown): string | null {
  try {
    return value instanceof Error && typeof value.stack === 'string' ? value.stack : null;
  } catch {
    return null;
  }
}

function safeJson(value: object): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
