import { PayloadTooLargeError, ValidationError, type ValidationIssue } from '../errors.js';
import type { Json } from './types.js';

/** Default size limit of a serialized payload, result or checkpoint: 1 MiB. */
export const DEFAULT_PAYLOAD_LIMIT = 1024 * 1024;

/**
 * Checks that `value` is plain JSON that every driver stores and returns unchanged,
 * and serializes it. One rule on every driver:
 * - refused: `bigint`, `NaN`/`±Infinity`, functions, symbols, cyclic references,
 *   `Date` and other class instances (convert them yourself, e.g. `toISOString()`),
 *   `undefined` inside arrays, strings or keys containing NUL (`\u0000`, which
 *   PostgreSQL cannot store) or lone UTF-16 surrogates (not representable in UTF-8),
 *   and arrays/objects nested deeper than {@link MAX_JSON_DEPTH} levels;
 * - an object property whose value is `undefined` is omitted, as `JSON.stringify` does;
 * - a top-level `undefined` becomes `null`.
 *
 * @param what - names the value in messages, e.g. "payload"
 * @param limitBytes - maximum UTF-8 length of the serialized JSON
 * @returns the JSON text
 * @throws ValidationError naming each bad field; PayloadTooLargeError over the limit
 */
export function serializeJson(value: unknown, what: string, limitBytes: number): string {
  const issues: ValidationIssue[] = [];
  checkValue(value === undefined ? null : value, [], new Set(), issues);
  if (issues.length > 0) throw new ValidationError(`${what} is not plain JSON`, issues.slice(0, 20));
  const text = JSON.stringify(value === undefined ? null : value);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > limitBytes) throw new PayloadTooLargeError(what, bytes, limitBytes);
  return text;
}

/** Parses JSON text written by `serializeJson`; null stays null. */
export function parseJson<T = Json>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

/**
 * Deepest nesting of arrays and objects accepted: 1024 levels. `JSON.stringify`
 * itself overflows the stack somewhere between 2,000 and 5,000 levels on Node 20.
 */
export const MAX_JSON_DEPTH = 1024;

/**
 * Records in `issues` what keeps `value` from being plain JSON. `path` is where `value`
 * is: one array for the whole walk, extended and restored around each member, copied
 * only into an issue (a copy per member was most of the check's time).
 */
function checkValue(value: unknown, path: (string | number)[], seen: Set<object>, issues: ValidationIssue[]): void {
  switch (typeof value) {
    case 'string':
      checkString(value, path, issues);
      return;
    case 'number':
      if (!Number.isFinite(value)) issues.push({ path: [...path], message: `${value} is not a JSON number` });
      return;
    case 'boolean':
      return;
    case 'bigint':
      issues.push({ path: [...path], message: 'bigint is not JSON; pass a string or a number' });
      return;
    case 'undefined':
      issues.push({ path: [...path], message: 'undefined is not JSON (inside an array)' });
      return;
    case 'function':
    case 'symbol':
      issues.push({ path: [...path], message: `a ${typeof value} is not JSON` });
      return;
  }
  if (value === null) return;
  if (path.length >= MAX_JSON_DEPTH) {
    issues.push({ path: path.slice(0, 3), message: `nested deeper than ${MAX_JSON_DEPTH} levels` });
    return;
  }
  const object = value as object;
  if (seen.has(object)) {
    issues.push({ path: [...path], message: 'cyclic reference' });
    return;
  }
  seen.add(object);
  if (Array.isArray(object)) {
    for (let index = 0; index < object.length; index++) {
      path.push(index);
      checkValue(object[index], path, seen, issues);
      path.pop();
    }
  } else {
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      const name = (object as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      issues.push({ path: [...path], message: `a ${name} is not plain JSON${name === 'Date' ? '; pass date.toISOString()' : ''}` });
    } else {
      for (const key in object) {
        if (!Object.hasOwn(object, key)) continue;
        const item = (object as Record<string, unknown>)[key];
        path.push(key);
        checkString(key, path, issues, 'key');
        if (item !== undefined) checkValue(item, path, seen, issues);
        path.pop();
      }
    }
  }
  seen.delete(object);
}

/** Records `value`'s storable-string problems at (a copy of) `path`. */
function checkString(value: string, path: (string | number)[], issues: ValidationIssue[], what = 'string'): void {
  for (const message of stringProblems(value, what)) issues.push({ path: [...path], message });
}

/**
 * The payload's string rule, for any text Baton stores (task, queue and schedule
 * names, keys): no NUL (`\u0000`, which PostgreSQL cannot store) and no lone UTF-16
 * surrogate (not representable in UTF-8: SQLite would store invalid UTF-8 and read
 * it back as U+FFFD).
 * @param what - the subject of the messages, e.g. "string" or "key"
 * @returns one message per broken rule; [] for a storable string
 */
export function stringProblems(value: string, what = 'string'): string[] {
  const problems: string[] = [];
  if (value.includes('\u0000')) problems.push(`${what} contains a NUL character (\\u0000)`);
  if (!value.isWellFormed()) problems.push(`${what} contains a lone UTF-16 surrogate`);
  return problems;
}
