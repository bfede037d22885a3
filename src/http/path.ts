import type { MiddlewareHandler } from 'hono';
import { HttpError } from './problem.js';

/**
 * Refuses a URL path whose percent-encoding does not decode to UTF-8 text (e.g.
 * `/api/queues/a%ED%A0%80b/pause`: `%ED%A0%80` is a lone surrogate's bytes) with a
 * 400 `validation` error. Hono hands such a segment to the route undecoded, so a
 * queue, schedule or service name would otherwise be taken as the literal `%ED…` text.
 * @throws HttpError (code validation) naming the path
 */
export const strictPath: MiddlewareHandler = async (c, next) => {
  const path = new URL(c.req.url).pathname;
  try {
    decodeURIComponent(path);
  } catch {
    throw new HttpError('validation', `the URL path ${path} is not valid percent-encoded UTF-8 (RFC 3986 section 2.5): encode names as UTF-8 before percent-encoding them`);
  }
  await next();
};
