import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { HttpError } from './problem.js';

/** The tokens of an app; neither set = everything open (`baton serve` allows that on loopback only). */
export interface Tokens {
  /** Read-only role: GET routes. */
  readToken?: string | undefined;
  /** Admin role: every route. */
  adminToken?: string | undefined;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Constant-time comparison: both sides are hashed to equal-length digests first. */
function same(given: Buffer, expected: Buffer | undefined): boolean {
  return expected !== undefined && timingSafeEqual(given, expected);
}

/** Paths open even when tokens are set: the probes (routes/probes.ts) and the dashboard's static files (they hold no data). */
function isPublic(path: string): boolean {
  return path === '/healthz' || path === '/readyz' || path === '/' || path === '/index.html' || path.startsWith('/assets/');
}

/** True for `localhost`, `127.x.x.x` and `[::1]` (with or without a port). */
function isLoopbackHost(host: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(`http://${host}`).hostname;
  } catch {
    return false;
  }
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Bearer-token auth and CSRF defence.
 * - No token configured: everything is open, to requests whose Host is a loopback
 *   name only (403 otherwise: DNS rebinding).
 * - Tokens configured: GET/HEAD need the read or admin token, anything else the
 *   admin token; `Authorization: Bearer <token>`. For `GET /api/events` (an
 *   EventSource cannot send headers) `?access_token=` is accepted too.
 *   Missing or unknown token → 401; read token on a write → 403.
 * - Every POST, and every request with a body, must be `Content-Type:
 *   application/json` (415), which a cross-site HTML form cannot send without a
 *   CORS preflight. A DELETE without a body needs no content type: no form can send
 *   one, and a cross-site script cannot without a preflight (the Fetch standard's
 *   CORS-safelisted methods are GET, HEAD and POST only).
 * - Cross-site requests are refused (403): every state change, and every read but of the
 *   public paths: a page of another origin must not make this server build answers (a list, a
 *   stream, the metrics) even if the browser then hides them. A request is cross-site when
 *   its `Sec-Fetch-Site` (sent by browsers) is anything but `same-origin` or `none` (typed
 *   in the address bar), or when its `Origin` header's host is not the request's host.
 *   Non-browser clients (curl, the CLI, SDKs: neither header) and the dashboard (same
 *   origin) pass.
 */
export function auth(tokens: Tokens): MiddlewareHandler {
  const read = tokens.readToken ? digest(tokens.readToken) : undefined;
  const admin = tokens.adminToken ? digest(tokens.adminToken) : undefined;
  const open = read === undefined && admin === undefined;
  return async (c, next) => {
    if (open && !isLoopbackHost(c.req.header('host') ?? new URL(c.req.url).host)) {
      // Without a token the app trusts the machine only; a page whose domain was
      // pointed at 127.0.0.1 (DNS rebinding) sends its own name as Host.
      throw new HttpError('forbidden', 'no token is configured, so only loopback host names (localhost, 127.0.0.1, [::1]) are served; configure a token to serve other names');
    }
    const method = c.req.method;
    const safe = method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
    const path = c.req.path;
    if (!open && !isPublic(path)) {
      const header = c.req.header('authorization') ?? '';
      const match = /^Bearer\s+(.+)$/i.exec(header.trim());
      let token = match?.[1];
      if (token === undefined && safe && path === '/api/events') token = c.req.query('access_token');
      if (token === undefined) throw new HttpError('unauthorized', 'missing bearer token: send Authorization: Bearer <token>');
      const given = digest(token);
      const isAdmin = same(given, admin);
      const isRead = !isAdmin && same(given, read);
      if (!isAdmin && !isRead) throw new HttpError('unauthorized', 'invalid token');
      if (!safe && !isAdmin) throw new HttpError('forbidden', 'this token is read-only; the admin token is needed to change anything');
    }
    if (!safe) {
      const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      const hasBody = Number(c.req.header('content-length') ?? 0) > 0 || c.req.header('transfer-encoding') !== undefined;
      if (type !== 'application/json' && (method === 'POST' || hasBody)) {
        throw new HttpError('unsupported_media_type', 'POST requests and requests with a body must be sent with Content-Type: application/json');
      }
    }
    if (!safe || !isPublic(path)) refuseCrossSite(c.req.header('sec-fetch-site'), c.req.header('origin'), c.req.header('host') ?? new URL(c.req.url).host);
    await next();
  };
}

/**
 * Refuses a request a browser sent for a page of another origin (see {@link auth}).
 * @throws HttpError forbidden naming the header at fault
 */
function refuseCrossSite(fetchSite: string | undefined, origin: string | undefined, host: string): void {
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') {
    throw new HttpError('forbidden', `cross-site request refused: Sec-Fetch-Site is ${JSON.stringify(fetchSite.slice(0, 40))}; this API answers its own origin (the dashboard) and non-browser clients only`);
  }
  if (origin === undefined) return;
  let originHost: string | undefined;
  try {
    originHost = new URL(origin).host;
  } catch {
    originHost = undefined;
  }
  if (originHost !== host) throw new HttpError('forbidden', `cross-origin request refused: Origin ${origin.slice(0, 200)} is not this server (${host})`);
}
