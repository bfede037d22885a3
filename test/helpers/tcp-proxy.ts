import { connect, createServer, type Socket } from 'node:net';
import { afterEach } from 'vitest';

/** A TCP proxy in the test process, to cut one client's database connections without touching the server. */
export interface TcpProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /**
   * Makes the target unreachable through the proxy: stops listening (new
   * connections are refused, ECONNREFUSED) and destroys every open connection.
   */
  cut(): Promise<void>;
  /** After a cut: listens on the same port again, so new connections reach the target. */
  restore(): Promise<void>;
}

const open = new Set<TcpProxy>();

/**
 * Starts a proxy on an ephemeral 127.0.0.1 port that forwards every connection to
 * `target`. Cut (closed) after the test if still open.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  let cut: Promise<void> | undefined;
  const proxy: TcpProxy = {
    port: address.port,
    cut: () =>
      (cut ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      })),
    restore: async () => {
      if (!cut) return;
      await cut;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(address.port, '127.0.0.1', () => resolve());
      });
      cut = undefined;
    },
  };
  open.add(proxy);
  return proxy;
}

afterEach(async () => {
  await Promise.all([...open].map((proxy) => proxy.cut()));
  open.clear();
});
