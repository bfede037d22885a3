/**
 * Error classes. Every error Baton throws is a `BatonError` with a string `code`
 * (the HTTP layer maps codes to statuses). `instanceof` works across two copies of
 * the package: each class is branded with a `Symbol.for` key and checks the brand,
 * the approach of the Temporal SDK.
 */

const brands = Symbol.for('baton.error.brands');

type Branded = { [brands]?: Set<string> };

function brand(name: string) {
  const key = `baton.${name}`;
  return {
    key,
    has(value: unknown): boolean {
      return typeof value === 'object' && value !== null && ((value as Branded)[brands]?.has(key) ?? false);
    },
  };
}

function mark(target: object, key: string): void {
  const t = target as Branded;
  if (!Object.prototype.hasOwnProperty.call(t, brands)) {
    Object.defineProperty(t, brands, { value: new Set<string>(), enumerable: false });
  }
  t[brands]!.add(key);
}

const baseBrand = brand('BatonError');

/** Base class of every error Baton throws. `code` is stable and machine-readable. */
export class BatonError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
    mark(this, baseBrand.key);
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return baseBrand.has(value) && (this === BatonError || brand(this.name).has(value));
  }
}

/** One problem found in a value: `path` names the field (e.g. `["user", "email"]`). */
export interface ValidationIssue {
  path: (string | number)[];
  message: string;
}

/** A payload, option or argument was refused. `issues` names each bad field. */
export class ValidationError extends BatonError {
  readonly issues: ValidationIssue[];
  /** The message without the list of issues, e.g. `invalid payload for task "signup"`. */
  readonly summary: string;
  constructor(message: string, issues: ValidationIssue[] = []) {
    super('validation', issues.length ? `${message}: ${formatIssues(issues)}` : message);
    this.issues = issues;
    this.summary = message;
    mark(this, brand('ValidationError').key);
  }
}

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
    mark(this, brand('PayloadTooLargeError').key);
  }
}

/** No job (or task) with that name or id. */
export class NotFoundError extends BatonError {
  constructor(message: string) {
    super('not_found', message);
    mark(this, brand('NotFoundError').key);
  }
}

/** The request conflicts with the current state, e.g. cancelling a completed job. */
export class ConflictError extends BatonError {
  readonly state: string | undefined;
  constructor(message: string, state?: string) {
    super('conflict', message);
    this.state = state;
    mark(this, brand('ConflictError').key);
  }
}

/** A configuration value is invalid; the message names the option. */
export class ConfigError extends BatonError {
  constructor(message: string) {
    super('config', message);
    mark(this, brand('ConfigError').key);
  }
}

/** The database could not be reached or refused a statement. `op` names the Store method. */
export class StoreError extends BatonError {
  readonly op: string;
  constructor(op: string, cause: unknown) {
    super('store', `store operation ${op} failed: ${describeError(cause)}`, { cause });
    this.op = op;
    mark(this, brand('StoreError').key);
  }
}

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
    mark(this, brand('LockBusyError').key);
  }
}

/** Thrown by a handler to fail the job at once, without further attempts. */
export class NonRetryableError extends BatonError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('non_retryable', message, options);
    mark(this, brand('NonRetryableError').key);
  }
}

/**
 * Base of the four reasons a job's `ctx.signal` fires with (`signal.reason`):
 * CancelledError, ShutdownError, TimeoutError, LeaseLostError.
 */
export class AbortReason extends BatonError {
  constructor(code: string, message: string) {
    super(code, message);
    mark(this, brand('AbortReason').key);
  }
}

/** The job was cancelled (`cancel(id, reason)` from any process). `reason` is the caller's text. */
export class CancelledError extends AbortReason {
  readonly reason: string | null;
  constructor(reason: string | null = null) {
    super('cancelled', reason ? `job cancelled: ${reason}` : 'job cancelled');
    this.reason = reason;
    mark(this, brand('CancelledError').key);
  }
}

/** The worker is shutting down; the job will be released and resumed elsewhere. */
export class ShutdownError extends AbortReason {
  constructor() {
    super('shutdown', 'worker shutting down; the job will be released to another worker');
    mark(this, brand('ShutdownError').key);
  }
}

/** The attempt ran past its timeout (ms). */
export class TimeoutError extends AbortReason {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super('timeout', `job timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
    mark(this, brand('TimeoutError').key);
  }
}

/** The worker lost the job's lease (another worker took it over); its writes are dropped. */
export class LeaseLostError extends AbortReason {
  constructor(message = 'lease lost: another worker owns this job now') {
    super('lease_lost', message);
    mark(this, brand('LeaseLostError').key);
  }
}

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
