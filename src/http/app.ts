import { Hono } from 'hono';
import { TrieRouter } from 'hono/router/trie-router';
import type { Baton } from '../baton.js';
import type { AnyTask } from '../job/task.js';
import { DEFAULT_PAYLOAD_LIMIT } from '../job/payload.js';
import { READY_TIMEOUT_MS } from '../client/readiness.js';
import { createMetrics, type Metrics } from '../observe/metrics.js';
import { auth } from './auth.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { openApiDocument } from './openapi.js';
import { strictUrl } from './strict-url.js';
import { HttpError, problemResponse } from './problem.js';
import { adminRoutes } from './routes/admin.js';
import { eventRoutes } from './routes/events.js';
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
 * @throws ConfigError for a `readyTimeout` out of range
 */
export function createHttpApp(baton: Baton, options: HttpAppOptions = {}): HttpApp {
  const bodyLimit = options.bodyLimit ?? DEFAULT_PAYLOAD_LIMIT + 64 * 1024;
  const tasks = options.tasks ? new Map(options.tasks.map((t) => [t.name, t])) : undefined;
  const metrics = createMetrics(baton);
  const app = new Hono();

  app.onError((error, c) => {
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
  app.use('*', auth({ readToken: options.readToken, adminToken: options.adminToken }));
  app.use('*', strictUrl);

  app.route('/', probeRoutes(baton, { readyTimeout: options.readyTimeout ?? READY_TIMEOUT_MS }));
  app.get('/api/openapi.json', (c) => c.json(openApiDocument));
  app.get('/metrics', async (c) => c.body(await metrics.text(), 200, { 'Content-Type': metrics.contentType }));
  app.route('/api/jobs', jobRoutes(baton, { tasks, bodyLimit }));
  app.route('/api', fleetRoutes(baton));
  app.route('/api', adminRoutes(baton, { bodyLimit }));
  app.route('/api', queueOpRoutes(baton, { bodyLimit }));
  app.route('/api', eventRoutes(baton, { intervalMs: options.eventsInterval ?? 500, heartbeatMs: options.eventsHeartbeat ?? 15_000 }));
  if (options.dashboard !== false) app.route('/', dashboard(baton));

  return Object.assign(app, { metrics });
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
