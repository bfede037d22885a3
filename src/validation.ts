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
import type { z } from 'zod';
import { ConfigError, ValidationError, type ValidationIssue } from './errors.js';

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
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, message: string, options: { subject?: 'payload' | 'options' } = {}): z.output<T> {
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
  options: { subject?: 'payload' | 'options' } = {},
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
  if (!parsed.success) throw new ConfigError(configMessage(what, toIssues(parsed.error.issues)));
  return parsed.data;
}

/** `worker option a: m1; worker option b.c: m2` (`(options)` for an issue about the whole object). */
function configMessage(what: string, issues: ValidationIssue[]): string {
  return issues.map((i) => `${what} ${i.path.join('.') || '(options)'}: ${i.message}`).join('; ');
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
