import { Hono } from 'hono';
import type { Baton } from '../../baton.js';
import { readyTimeout } from '../../client/readiness.js';

/**
 * The probes of an orchestrator, open without a token (they reveal no data; see
 * auth.ts) and never cached:
 * - `GET /healthz` (liveness): 200 `{ ok: true, driver }` whenever the process and its
 *   event loop answer; no database call, so a database outage never gets the process
 *   restarted.
 * - `GET /readyz` (readiness): 200 when `baton.readiness()` is ready — the database
 *   answers within `readyTimeout` ms, the schema is current, every worker of the
 *   process runs (a stopping worker is not ready from the moment its stop begins) —
 *   else 503; the body is the {@link Readiness} either way, `failed` naming the checks
 *   that failed (`Readiness`, src/client/readiness.ts).
 * @param options.readyTimeout - ms the readiness check waits for the database, 1..2147483647
 * @throws ConfigError for a readyTimeout out of range
 */
export function probeRoutes(baton: Baton, options: { readyTimeout: number }): Hono {
  const timeoutMs = readyTimeout(options.readyTimeout);
  const app = new Hono();
  app.get('/healthz', (c) => {
    c.header('Cache-Control', 'no-store');
    return c.json({ ok: true, driver: baton.store.driver });
  });
  app.get('/readyz', async (c) => {
    const readiness = await baton.readiness({ timeoutMs });
    c.header('Cache-Control', 'no-store');
    return c.json(readiness, readiness.ready ? 200 : 503);
  });
  return app;
}
