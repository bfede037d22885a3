import { connect, createServer, type Socket } from 'node:net';
import { afterEach } from 'vitest';

/**
 * How a cut makes the target unreachable:
 * - `refuse`: the proxy stops listening, so a new connection is refused at once (ECONNREFUSED),
 *   as when the server's host is up but nothing listens;
 * - `blackhole`: the proxy keeps accepting connections but forwards nothing and answers
 *   nothing, so a new connection stalls until the client's own timeout, as when a network
 *   partition drops packets.
 */
export type CutMode = 'refuse' | 'blackhole';

/** A TCP proxy in the test process, to cut one client's database connections without touching the server. */
export interface TcpProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** Connections accepted and held silent by a `blackhole` cut, still open. */
  readonly held: number;
  /**
   * Makes the target unreachable through the proxy: destroys every open connection (its
   * client sees the connection end), then refuses or blackholes new ones ({@link CutMode}).
   * Cutting a cut proxy changes nothing.
   * @param mode - @defaultValue 'refuse'
   */
  cut(mode?: CutMode): Promise<void>;
  /**
   * After a cut: new connections reach the target again. Connections a blackhole held are
   * destroyed (they were never connected). Restoring an open proxy changes nothing.
   */
  restore(): Promise<void>;
  /** Destroys every connection and stops listening for good; done after each test. */
  close(): Promise<void>;
}

const open = new Set<TcpProxy>();

/**
 * Starts a proxy on an ephemeral 127.0.0.1 port that forwards every connection to
 * `target`. Closed after the test if still open.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const held = new Set<Socket>();
  const track = (socket: Socket, set = sockets) => {
    set.add(socket);
    socket.on('close', () => set.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  let state: 'open' | 'refusing' | 'blackholing' | 'closed' = 'open';
  const server = createServer((client) => {
    if (state === 'blackholing') {
      track(client, held);
      client.resume(); // read and drop whatever the client sends
      return;
    }
    const upstream = connect(target.port, target.host);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  let port = 0;
  await listen();
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  port = address.port;
  let closing: Promise<void> | undefined;
  const stopListening = () => (closing ??= new Promise<void>((resolve) => server.close(() => resolve())));
  const destroyAll = (set: Set<Socket>) => {
    for (const socket of set) socket.destroy();
  };
  const proxy: TcpProxy = {
    port,
    get held() {
      return held.size;
    },
    async cut(mode: CutMode = 'refuse') {
      if (state !== 'open') return;
      state = mode === 'refuse' ? 'refusing' : 'blackholing';
      destroyAll(sockets);
      if (mode === 'refuse') await stopListening();
    },
    async restore() {
      if (state === 'refusing') {
        await closing;
        closing = undefined;
        await listen();
      }
      if (state === 'blackholing' || state === 'refusing') {
        destroyAll(held);
        state = 'open';
      }
    },
    async close() {
      if (state === 'closed') return;
      state = 'closed';
      destroyAll(sockets);
      destroyAll(held);
      await stopListening();
    },
  };
  open.add(proxy);
  return proxy;
}

afterEach(async () => {
  await Promise.all([...open].map((proxy) => proxy.close()));
  open.clear();
});
