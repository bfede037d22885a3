/**
 * One place that turns schema issues into Baton's errors. Every Standard Schema
 * (zod, valibot, arktype…) reports problems as `{ message, path }` issues, where a
 * path segment is a key or a `{ key }` object; zod's own `error.issues` have the
 * same shape. Two outcomes:
 *
 * - input a caller passed (payload, enqueue options, list filters) → `ValidationError`
 *   with one issue per bad field ({@link parseInput}, {@link validateWith});
 * - configuration (worker, task, schedule, service options) → `ConfigError` whose
 *   message names each option ({@link parseConfig}).
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import * as z from 'zod';
import { ConfigError, ValidationError, type ValidationIssue, type ValidationSubject } from './errors.js';
import { stringProblems } from './job/payload.js';

/** A schema issue: Standard Schema's, which zod's issues satisfy too. */
type SchemaIssue = StandardSchemaV1.Issue;

/**
 * Schema issues → {@link ValidationIssue}s with plain keys: `{ key }` segments are
 * unwrapped, symbol keys become their description.
 * @returns one issue per input issue, in order
 */
export function toIssues(issues: ReadonlyArray<SchemaIssue>): ValidationIssue[] {
  return issues.map((issue) => ({
    path: (issue.path ?? []).map((segment) => plainKey(typeof segment === 'object' && segment !== null ? segment.key : segment)),
    message: issue.message,
  }));
}

function plainKey(key: PropertyKey): string | number {
  return typeof key === 'symbol' ? (key.description ?? 'symbol') : key;
}

/**
 * Parses `value` with a zod schema, synchronously.
 * @param message - what was refused, e.g. "invalid enqueue options"
 * @param options.subject - the argument the issue paths start from (see ValidationError.subject)
 * @returns the schema's output
 * @throws ValidationError with one issue per bad field
 */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, message: string, options: { subject?: ValidationSubject } = {}): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ValidationError(message, toIssues(parsed.error.issues), options);
  return parsed.data;
}

/**
 * Validates `value` with any Standard Schema (it may be asynchronous).
 * @param message - what was refused, e.g. `invalid payload for task "signup"`
 * @param options.subject - the argument the issue paths start from (see ValidationError.subject)
 * @returns the schema's output (it may coerce or default fields)
 * @throws ValidationError with one issue per bad field
 */
export async function validateWith<Input, Output>(
  schema: StandardSchemaV1<Input, Output>,
  value: unknown,
  message: string,
  options: { subject?: ValidationSubject } = {},
): Promise<Output> {
  const outcome = await schema['~standard'].validate(value);
  if (outcome.issues) throw new ValidationError(message, toIssues(outcome.issues), options);
  return outcome.value;
}

/**
 * Parses configuration with a zod schema, synchronously.
 * @param what - the prefix naming the options, e.g. `worker option` or `task "resize" option`
 * @returns the schema's output
 * @throws ConfigError naming every bad option: `worker option leaseTtl: <message>; …`
 */
export function parseConfig<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = toIssues(parsed.error.issues);
    throw new ConfigError(configMessage(what, issues), issues);
  }
  return parsed.data;
}

/**
 * `worker option a: m1; worker option b.c: m2` (`(options)` for an issue about the
 * whole object). A path segment that is empty or has a control character or a lone
 * surrogate (a record key) is shown as a JSON string, so the message prints as one
 * clean line.
 */
function configMessage(what: string, issues: ValidationIssue[]): string {
  const segment = (p: string | number) => (typeof p === 'string' && (p === '' || /[\u0000-\u001f\u007f-\u009f]/.test(p) || !p.isWellFormed()) ? JSON.stringify(p) : p);
  return issues.map((i) => `${what} ${i.path.map(segment).join('.') || '(options)'}: ${i.message}`).join('; ');
}

/**
 * The same validation error with `prefix` in front of every issue path (an adapter
 * naming fields as its caller sees them: `options.priority` in an HTTP body).
 * Other errors, and a PayloadTooLargeError (not about a field), come back unchanged.
 */
export function withPathPrefix(error: unknown, prefix: (string | number)[]): unknown {
  if (!(error instanceof ValidationError) || error.code !== 'validation') return error;
  return new ValidationError(
    error.summary,
    error.issues.map((i) => ({ path: [...prefix, ...i.path], message: i.message })),
    error.subject === undefined ? {} : { subject: error.subject },
  );
}

/**
 * The name of a task, schedule or service: 1..200 of A-Z a-z 0-9 and `_ . : - /`.
 * An admin lookup by a name outside it finds nothing without asking the database.
 */
export const DEFINITION_NAME = /^[A-Za-z0-9_.:\-/]{1,200}$/;

/**
 * A string every driver stores and returns unchanged: the payload's string rule
 * ({@link stringProblems}: no NUL, no lone UTF-16 surrogate), for task, queue and
 * schedule names and keys. Chain length limits after it: `storableString().min(1).max(200)`.
 */
export function storableString(): z.ZodString {
  return z.string().check((ctx) => {
    for (const message of stringProblems(ctx.value)) ctx.issues.push({ code: 'custom', message, input: ctx.value });
  });
}

/** A queue's name wherever one is given (enqueue, queue admin, list filters): 1..200 {@link storableString} characters. */
export const queueNameSchema = storableString().min(1).max(200);

/**
 * One ISO 8601 grammar for a time given as text, shared by the CLI (`--run-at`) and
 * the HTTP API (`options.runAt`):
 * - `YYYY-MM-DD`: midnight UTC of that day;
 * - `YYYY-MM-DDTHH:MM[:SS[.fraction]]` followed by `Z` or an offset `±HH:MM`
 *   (an offset is required: a time without one is ambiguous). Digits of the
 *   fraction past milliseconds are dropped.
 * Every field must exist on the calendar: month 01..12, a day the month has
 * (2024-02-29 yes, 2023-02-29 and 2024-02-30 no), hour 00..23, minute and second
 * 00..59 (no leap second), offset hours 00..23. Nothing is rolled over.
 * @returns the instant, or a message saying why `text` is refused
 *   (e.g. `2024-02-30 does not exist: 2024-02 has 29 days`)
 */
export function parseIsoDateTime(text: string): Date | string {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):(\d{2})))?$/.exec(text);
  if (!match) return /^[+-]?\d{5,}-/.test(text) ? `year ${/^[+-]?\d+/.exec(text)![0]} does not have 4 digits: times are within 1970..9999` : `not ${ISO_DATE_TIME_HINT}`;
  const [, y, mo, d, h = '0', mi = '0', sec = '0', fraction = '', , sign, oh = '0', om = '0'] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12) return `month ${mo} does not exist`;
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return `${y}-${mo}-${d} does not exist: ${y}-${mo} has ${days} days`;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return `time ${h}:${mi}:${sec} does not exist (00:00:00..23:59:59)`;
  if (Number(oh) > 23 || Number(om) > 59) return `offset ${sign}${oh}:${om} does not exist`;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0..99 to 1900..1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(Number(h), Number(mi), Number(sec), Number(fraction.padEnd(3, '0').slice(0, 3)));
  const offsetMinutes = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  return new Date(date.getTime() - offsetMinutes * 60_000);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** The grammar {@link parseIsoDateTime} accepts, for messages. */
export const ISO_DATE_TIME_HINT = 'an ISO 8601 date-time with Z or an offset (2030-01-31T12:00:00Z, 2030-01-31T14:00:00+02:00) or a date (2030-01-31, midnight UTC)';
