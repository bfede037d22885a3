import { Hono } from 'hono';
import { TrieRouter } from 'hono/router/trie-router';
import type { Baton } from '../baton.js';
import type { AnyTask } from '../job/task.js';
import { DEFAULT_PAYLOAD_LIMIT } from '../job/payload.js';
import { READY_TIMEOUT_MS } from '../client/readiness.js';
import { Gauge } from 'prom-client';
import { ConfigError, describeError } from '../errors.js';
import { createMetrics, type Metrics } from '../observe/metrics.js';
import { auth } from './auth.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { DEFAULT_EVENT_CLIENTS, EventFeed } from './event-feed.js';
import { openApiDocument } from './openapi.js';
import { DEFAULT_RESPONSE_LIMIT } from './serialize.js';
import { strictUrl } from './strict-url.js';
import { HttpError, problemResponse } from './problem.js';
import { adminRoutes } from './routes/admin.js';
import { eventRoutes, readChange } from './routes/events.js';
import { fleetRoutes } from './routes/fleet.js';
import { jobRoutes } from './routes/jobs.js';
import { probeRoutes } from './routes/probes.js';
import { queueOpRoutes } from './routes/queue-ops.js';

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  /**
   * The tasks this server knows: `POST /api/jobs` validates payloads against their
   * schemas and answers 404 for any other task name. Without it, names are checked
   * against the Baton's own `tasks` option when it has one, else accepted as they are.
   */
  tasks?: AnyTask[];
  /** Token of the read-only role (GET routes). */
  readToken?: string | undefined;
  /** Token of the admin role (every route). */
  adminToken?: string | undefined;
  /** Largest request body in bytes; more → 413. @defaultValue 1 MiB + 64 KiB (the payload limit plus room for the envelope) */
  bodyLimit?: number;
  /**
   * Poll period of `GET /api/events`, ms: how often the counts are read, and the longest
   * a followed job (`?job=ID`) goes unread when no change notification reports it. @defaultValue 500
   */
  eventsInterval?: number;
  /** Comment heartbeat period of `GET /api/events`, ms. @defaultValue 15000 */
  eventsHeartbeat?: number;
  /**
   * Most `GET /api/events` streams open at once (counts and `?job=ID` together), 1..100000;
   * one more is answered 503 (code busy). Each count stream shares one store read per
   * `eventsInterval`; each followed job costs a read of its own. @defaultValue 100 (DEFAULT_EVENT_CLIENTS)
   */
  eventsMaxClients?: number;
  /**
   * Largest body, bytes, of a job list page or a job's answer (`GET /api/jobs`, `GET /api/jobs/:id`),
   * 1024..2147483647; more → 413 (code response_too_large). Values there come as previews (over
   * 64 KiB in a job's answer), so only very long error or timeline histories come near the
   * default. A value download (`/api/jobs/:id/payload`…) is the value, at most the payload
   * limit. @defaultValue 4 MiB (DEFAULT_RESPONSE_LIMIT)
   */
  responseLimit?: number;
  /** Serve the dashboard at `/`. @defaultValue true */
  dashboard?: boolean;
  /** ms `GET /readyz` waits for the database before it answers 503, 1..2147483647. @defaultValue 2000 (READY_TIMEOUT_MS) */
  readyTimeout?: number;
}

/** The hono app plus its metrics (close it to stop listening to worker events). */
export type HttpApp = Hono & { readonly metrics: Metrics };

/**
 * The HTTP API, `/metrics` and the dashboard as a web-standard request handler:
 * `app.fetch(request)` answers a `Request` with a `Response`, so it mounts in
 * Hono, Next.js route handlers, or Node (`@hono/node-server`), Express and Fastify
 * through their fetch adapters. Routes, auth and errors: see openapi.ts, auth.ts,
 * problem.ts. It never touches the store itself: every route goes through `baton`.
 * Public as `import { createHttpApp } from 'baton-jobs/http'` (an entry of its own,
 * so that importing `baton-jobs` does not load hono and prom-client).
 * Every answer carries `X-Content-Type-Options: nosniff`.
 * @throws ConfigError for a `readyTimeout`, `eventsMaxClients` or `responseLimit` out of range
 */
export function createHttpApp(baton: Baton, options: HttpAppOptions = {}): HttpApp {
  const bodyLimit = options.bodyLimit ?? DEFAULT_PAYLOAD_LIMIT + 64 * 1024;
  const tasks = options.tasks ? new Map(options.tasks.map((t) => [t.name, t])) : undefined;
  const responseLimit = checkedInteger(options.responseLimit, 'responseLimit', 1024, 2_147_483_647) ?? DEFAULT_RESPONSE_LIMIT;
  const maxClients = checkedInteger(options.eventsMaxClients, 'eventsMaxClients', 1, 100_000) ?? DEFAULT_EVENT_CLIENTS;
  const metrics = createMetrics(baton);
  const eventsInterval = options.eventsInterval ?? 500;
  const feed = new EventFeed(() => readChange(baton), { intervalMs: eventsInterval, maxClients });
  new Gauge({ name: 'baton_http_event_clients', help: 'GET /api/events streams open on this app', registers: [metrics.registry], collect() { this.set(feed.clients); } });
  const app = new Hono();

  app.onError((error, c) => {
    if (c.req.raw.signal.aborted) {
      // The client went away (an upload cut short, a closed tab): nothing to answer, nothing broken here.
      baton.logger.info({ method: c.req.method, path: c.req.path, reason: describeError(error) }, 'HTTP request aborted by the client');
      return problemResponse(c, new HttpError('aborted', 'the request was aborted by the client'));
    }
    const answer = problemResponse(c, error);
    if (answer.status >= 500) baton.logger.error({ err: error, method: c.req.method, path: c.req.path }, 'HTTP request failed');
    return answer;
  });
  const allowed = allowedMethods(app);
  app.notFound((c) => {
    const methods = allowed(c.req.path);
    if (methods.length === 0) return problemResponse(c, new HttpError('not_found', `no route ${c.req.method} ${c.req.path}`));
    c.header('Allow', methods.join(', '));
    return problemResponse(c, new HttpError('method_not_allowed', `${c.req.method} is not allowed on ${c.req.path}; allowed: ${methods.join(', ')}`));
  });
  app.use('*', async (c, next) => {
    await next();
    c.header('X-Content-Type-Options', 'nosniff');
  });
  app.use('*', auth({ readToken: options.readToken, adminToken: options.adminToken }));
  app.use('*', strictUrl);

  app.route('/', probeRoutes(baton, { readyTimeout: options.readyTimeout ?? READY_TIMEOUT_MS }));
  app.get('/api/openapi.json', (c) => c.json(openApiDocument));
  app.get('/metrics', async (c) => c.body(await metrics.text(), 200, { 'Content-Type': metrics.contentType }));
  app.route('/api/jobs', jobRoutes(baton, { tasks, bodyLimit, responseLimit }));
  app.route('/api', fleetRoutes(baton));
  app.route('/api', adminRoutes(baton, { bodyLimit }));
  app.route('/api', queueOpRoutes(baton, { bodyLimit }));
  app.route('/api', eventRoutes(baton, feed, { intervalMs: eventsInterval, heartbeatMs: options.eventsHeartbeat ?? 15_000 }));
  if (options.dashboard !== false) app.route('/', dashboard(baton));

  return Object.assign(app, { metrics });
}

/** `value` when it is an integer in min..max (undefined stays undefined). @throws ConfigError naming `name` */
function checkedInteger(value: number | undefined, name: string, min: number, max: number): number | undefined {
  if (value !== undefined && !(Number.isInteger(value) && value >= min && value <= max)) throw new ConfigError(`${name} must be an integer ${min}..${max}; got ${String(value)}`);
  return value;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * The methods `app`'s routes answer on a path (GET implies HEAD), for a 405 with `Allow`
 * (RFC 9110 §15.5.6) instead of a 404 when only the method is wrong. Read from
 * `app.routes` at the first call, once every route is registered.
 */
function allowedMethods(app: Hono): (path: string) => string[] {
  let router: TrieRouter<string> | undefined;
  return (path) => {
    if (!router) {
      router = new TrieRouter<string>();
      for (const route of app.routes) if (route.method !== 'ALL') router.add(route.method, route.path, route.method);
    }
    const found = router;
    return METHODS.filter((m) => found.match(m === 'HEAD' ? 'GET' : m, path)[0].length > 0);
  };
}

/** The dashboard's routes; when its files cannot be loaded (a broken install), a page saying so, and the API still works. */
function dashboard(baton: Baton): Hono {
  try {
    return dashboardRoutes();
  } catch (error) {
    baton.logger.warn({ err: error }, 'dashboard files missing; serving the API only');
    const app = new Hono();
    app.get('/', (c) => c.text('The Baton dashboard files are missing from this install; the API is at /api.', 503));
    return app;
  }
}
