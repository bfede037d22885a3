import type { MiddlewareHandler } from 'hono';
import { ValidationError } from '../errors.js';
import { HttpError } from './problem.js';

/**
 * Refuses a URL whose query string names a parameter twice (`?state=failed&state=queued`),
 * or whose path or query string has percent-encoding that does not
 * decode to UTF-8 text (e.g. `/api/queues/a%ED%A0%80b/pause` or `?queue=%FF`:
 * `%ED%A0%80` is a lone surrogate's bytes) with a 400 `validation` error. Hono hands
 * such a segment to the route undecoded, so a queue, schedule or service name would
 * otherwise be taken as the literal `%ED…` text; and of a repeated parameter it would
 * take the first value silently (no route takes a list in the query).
 * @throws HttpError (code validation) naming the path or query; ValidationError with the repeated parameter's name as the path
 */
export const strictUrl: MiddlewareHandler = async (c, next) => {
  const { pathname, search } = new URL(c.req.url);
  for (const [part, text] of [['path', pathname], ['query string', search.replaceAll('+', ' ')]] as const) {
    try {
      decodeURIComponent(text);
    } catch {
      const shown = part === 'path' ? pathname : search;
      throw new HttpError('validation', `the URL ${part} ${shown} is not valid percent-encoded UTF-8 (RFC 3986 section 2.5): encode names as UTF-8 before percent-encoding them`);
    }
  }
  const names = new Set<string>();
  for (const name of new URLSearchParams(search).keys()) {
    if (names.has(name)) throw new ValidationError('invalid query string', [{ path: [name], message: 'given more than once; give each query parameter once (none takes a list)' }]);
    names.add(name);
  }
  await next();
};
