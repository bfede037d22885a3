import type { AddressInfo } from 'node:net';
import { ConfigError } from '../errors.js';

/** Hosts that only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The tokens from options, else `BATON_API_TOKEN` (read-only) and `BATON_ADMIN_TOKEN` (admin). */
export function tokensFromEnv(options: { readToken?: string | undefined; adminToken?: string | undefined }): { readToken?: string; adminToken?: string } {
  const readToken = givenToken('--read-token', options.readToken) ?? givenToken('BATON_API_TOKEN', process.env.BATON_API_TOKEN || undefined);
  const adminToken = givenToken('--admin-token', options.adminToken) ?? givenToken('BATON_ADMIN_TOKEN', process.env.BATON_ADMIN_TOKEN || undefined);
  return { ...(readToken ? { readToken } : {}), ...(adminToken ? { adminToken } : {}) };
}

/**
 * A token as given, or undefined when not given. An empty or blank one is refused: an
 * empty `--admin-token ''` used to drop the token silently, BATON_ADMIN_TOKEN with it.
 * @throws ConfigError naming where the token came from
 */
function givenToken(from: string, token: string | undefined): string | undefined {
  if (token !== undefined && token.trim() === '') throw new ConfigError(`${from} is ${token === '' ? 'empty' : 'blank'}: give a token, or leave it out`);
  return token;
}

/**
 * The shortest token accepted on a non-loopback host, in characters: 16, about 95 bits
 * from a password generator's letters and digits (OWASP's session-id guidance asks for
 * at least 64 bits of entropy). `openssl rand -hex 32` gives 64.
 */
export const MIN_NETWORK_TOKEN_LENGTH = 16;

/**
 * Refuses a non-loopback host when no token is configured, or one shorter than
 * {@link MIN_NETWORK_TOKEN_LENGTH} (blanks around it not counted): an open API on the
 * network would let anyone enqueue and cancel jobs. Callers check it before they
 * open anything (`baton serve` before the database), {@link listen} again.
 * @throws ConfigError naming the host and how to set a token
 */
export function refuseOpenNetwork(host: string, tokens: { readToken?: string; adminToken?: string }): void {
  if (isLoopback(host)) return;
  if (!tokens.readToken && !tokens.adminToken) {
    throw new ConfigError(`refusing to serve on ${host} without a token: set BATON_ADMIN_TOKEN (and BATON_API_TOKEN for read-only access; baton serve also takes --admin-token), or listen on 127.0.0.1`);
  }
  for (const [name, token] of [['admin', tokens.adminToken], ['read', tokens.readToken]] as const) {
    if (token !== undefined && token.trim().length < MIN_NETWORK_TOKEN_LENGTH) {
      throw new ConfigError(`refusing to serve on ${host} with ${name === 'admin' ? 'an admin' : 'a read'} token of ${token.trim().length} characters: on a non-loopback host a token needs at least ${MIN_NETWORK_TOKEN_LENGTH} (try openssl rand -hex 32), or listen on 127.0.0.1`);
    }
  }
}

/**
 * The longest a request may take to arrive, headers and body, ms: 10 s (Node's own default
 * is 300 s, and 60 s for the headers). A client sending a body slowly or never (slow loris)
 * is answered 408 and cut after it, give or take {@link CONNECTIONS_CHECK_MS}; answers
 * themselves (an event stream) are not limited.
 */
export const REQUEST_TIMEOUT_MS = 10_000;

/** How often Node checks requests against {@link REQUEST_TIMEOUT_MS}, ms (Node's default: 30 s). */
export const CONNECTIONS_CHECK_MS = 1_000;

/**
 * Listens with `fetch` on host:port (Node http through @hono/node-server, loaded
 * on this first call so that a CLI command that serves nothing does not load it).
 * Refuses a non-loopback host when no token is configured: an open API on the
 * network would let anyone enqueue and cancel jobs. A request whose headers and body
 * have not all arrived within `requestTimeoutMs` is cut (408).
 * @param options.requestTimeoutMs - ms, 1000..2147483647 @defaultValue 10000 ({@link REQUEST_TIMEOUT_MS})
 * @returns the URL and close()
 * @throws ConfigError for an open API on a non-loopback host or a bad timeout; the listen error (port in use…)
 */
export async function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  options: { host: string; port: number; tokens: { readToken?: string; adminToken?: string }; requestTimeoutMs?: number },
): Promise<{ url: string; close(): Promise<void> }> {
  refuseOpenNetwork(options.host, options.tokens);
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  if (!Number.isInteger(requestTimeout) || requestTimeout < 1000 || requestTimeout > 2_147_483_647) {
    throw new ConfigError(`requestTimeoutMs must be an integer 1000..2147483647 (ms); got ${String(options.requestTimeoutMs)}`);
  }
  const { serve } = await import('@hono/node-server');
  const serverOptions = { requestTimeout, headersTimeout: requestTimeout, connectionsCheckingInterval: CONNECTIONS_CHECK_MS };
  const server = serve({ fetch, port: options.port, hostname: options.host, serverOptions });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
