/**
 * The TCP proxy the nemesis cuts a worker off the database with (test/helpers/tcp-proxy.ts),
 * against the real PostgreSQL: a pg client through the proxy works; on a cut its live
 * connection fails, and a new connection is refused (`refuse`) or stalls unanswered
 * (`blackhole`); after restore, connections work again.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresUrl } from '../helpers/db.js';
import { until } from '../helpers/events.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const server = new URL(postgresUrl);
const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
});

/** A pg client to the test database through `proxy` (not yet connected); its 'error' events are kept. */
function clientThrough(proxy: TcpProxy): { client: pg.Client; errors: Error[] } {
  const url = new URL(postgresUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  const client = new pg.Client({ connectionString: url.toString() });
  const errors: Error[] = [];
  client.on('error', (error) => errors.push(error));
  clients.push(client);
  return { client, errors };
}

async function connectedThrough(proxy: TcpProxy): Promise<{ client: pg.Client; errors: Error[] }> {
  const c = clientThrough(proxy);
  await c.client.connect();
  expect((await c.client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  return c;
}

const target = () => ({ host: server.hostname, port: Number(server.port || 5432) });

describe('the TCP proxy between a worker and PostgreSQL', () => {
  it('refuse: the live connection fails, a new one is refused, and after restore a new one works', async () => {
    const proxy = await startTcpProxy(target());
    const live = await connectedThrough(proxy);
    await proxy.cut();
    await until(() => live.errors.length > 0, 'the live client sees its connection end');
    await expect(live.client.query('SELECT 1')).rejects.toThrow();
    await expect(clientThrough(proxy).client.connect()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await proxy.restore();
    await connectedThrough(proxy);
  });

  it('blackhole: the live connection fails, a new one stalls unanswered until restore, then connections work', async () => {
    const proxy = await startTcpProxy(target());
    const live = await connectedThrough(proxy);
    await proxy.cut('blackhole');
    await until(() => live.errors.length > 0, 'the live client sees its connection end');

    const stalled = clientThrough(proxy);
    let settled = false;
    const connecting = stalled.client.connect().finally(() => (settled = true));
    connecting.catch(() => undefined);
    await until(() => proxy.held === 1, 'the proxy holds the new connection');
    // Held and unanswered: PostgreSQL never saw it, so the startup handshake cannot have completed.
    expect(settled).toBe(false);

    await proxy.restore();
    await expect(connecting).rejects.toThrow(); // the held connection is dropped, never connected
    await until(() => proxy.held === 0, 'the held connection is closed');
    await connectedThrough(proxy);
  });

  it('cut and restore are idempotent, and close ends everything', async () => {
    const proxy = await startTcpProxy(target());
    await proxy.restore(); // open: nothing to do
    await proxy.cut();
    await proxy.cut('blackhole'); // already cut: stays refusing
    await expect(clientThrough(proxy).client.connect()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await proxy.restore();
    await proxy.restore();
    await connectedThrough(proxy);
    await proxy.close();
    await expect(clientThrough(proxy).client.connect()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
