import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../package-root.js';
import { Hono } from 'hono';

/**
 * The dashboard's static files: `index.html` at `/` and the whitelisted files of
 * `assets/` at `/assets/<name>`. Plain HTML, CSS and one ES module — no build step.
 *
 * The page itself holds no data (every figure comes from `/api/*`, which carries the
 * auth rules), so it is served without a token: a browser cannot attach a bearer
 * header to a navigation. Its Content-Security-Policy allows scripts and styles from
 * this origin only, so even a rendering bug could not run a payload's inline script
 * or event handler (the page renders user data with `textContent` anyway).
 */

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The assets served under `/assets/`: a fixed list, so no request path reaches the file system. */
const ASSETS = ['app.js', 'style.css', 'favicon.svg'];

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  // Small files; revalidate so an upgrade shows at once.
  'Cache-Control': 'no-cache',
};

/**
 * The folder holding index.html: the package's `src/http/dashboard/`, whether this
 * runs from source or from the build (which copies no static files; the package
 * ships `src`).
 */
function dashboardDir(): string {
  const dir = join(packageRoot(), 'src', 'http', 'dashboard');
  if (!existsSync(join(dir, 'index.html'))) throw new Error(`baton dashboard: index.html not found in ${dir}`);
  return dir;
}

interface StaticFile {
  body: string;
  type: string;
}

function load(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const read = (name: string, path: string) => {
    const ext = path.slice(path.lastIndexOf('.'));
    files.set(name, { body: readFileSync(path, 'utf8'), type: CONTENT_TYPES[ext] ?? 'application/octet-stream' });
  };
  read('/', join(dir, 'index.html'));
  for (const asset of ASSETS) read(`/assets/${asset}`, join(dir, 'assets', asset));
  return files;
}

/**
 * A hono sub-app serving the dashboard: `GET /` (the page) and `GET /assets/:name`.
 * Files are read once, when this is called. Unknown assets are 404.
 */
export function dashboardRoutes(): Hono {
  const files = load(dashboardDir());
  const app = new Hono();
  const send = (file: StaticFile) =>
    new Response(file.body, { status: 200, headers: { 'Content-Type': file.type, ...SECURITY_HEADERS } });
  app.get('/', () => send(files.get('/')!));
  app.get('/assets/:name', (c) => {
    const file = files.get(`/assets/${c.req.param('name')}`);
    if (!file) return c.json({ error: { code: 'not_found', message: `no dashboard asset ${c.req.param('name')}` } }, 404);
    return send(file);
  });
  return app;
}
