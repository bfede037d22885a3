/**
 * `/readyz` with a PostgreSQL server that does not answer (issue 13, item 3): refused
 * connections (a TCP proxy in the test process, cut) and a read that hangs (the
 * migration ledger locked by another session) both answer 503 naming "database",
 * within the timeout; the probe is ready again once the database answers. `/healthz`
 * never asks the database.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createBaton, type Readiness } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton, postgresUrl, tempDatabase, testLogger } from '../helpers/db.js';
import { until } from '../helpers/events.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

type App = ReturnType<typeof createHttpApp>;

async function probe(app: App, path: '/healthz' | '/readyz') {
  const response = await app.fetch(new Request(`http://localhost${path}`));
  return { status: response.status, json: (await response.json()) as Readiness };
}

const unreachable = { ready: false, failed: ['database'], checks: { database: { ok: false, reason: 'the database did not answer' }, schema: { ok: false, reason: 'not checked: the database did not answer' } } };

describe('/readyz on PostgreSQL', () => {
  it('503 naming "database" while connections are refused, 200 again once they are not; /healthz 200 throughout', async () => {
    const db = tempDatabase();
    await openBaton({ database: db.url }); // migrates the schema, directly
    const target = new URL(postgresUrl);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(db.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const baton = await createBaton({ database: url.toString(), logger: testLogger() });
    try {
      const app = createHttpApp(baton);
      expect((await probe(app, '/readyz')).status).toBe(200);
      await proxy.cut();
      expect(await probe(app, '/readyz')).toEqual({ status: 503, json: unreachable });
      expect((await probe(app, '/healthz')).status).toBe(200);
      await proxy.restore();
      expect((await probe(app, '/readyz')).status).toBe(200);
    } finally {
      await baton.close();
    }
  });

  it('503 naming "database" when the read does not answer within readyTimeout (the ledger locked by another session); concurrent probes share one read; 200 once the lock is gone', async () => {
    const db = tempDatabase();
    // Four pool connections: were each probe to read on its own, each read would wait on the lock.
    const url = new URL(db.url);
    url.searchParams.set('pool_size', '4');
    const baton = await openBaton({ database: url.toString() });
    const app = createHttpApp(baton, { readyTimeout: 200 });
    expect((await probe(app, '/readyz')).status).toBe(200);

    const schema = new URL(db.url).searchParams.get('schema')!;
    const locker = new pg.Client({ connectionString: postgresUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${schema}".baton_migrations IN ACCESS EXCLUSIVE MODE`);
      const answers = await Promise.all([probe(app, '/readyz'), probe(app, '/readyz')]);
      for (const answer of answers) {
        expect(answer).toEqual({ status: 503, json: { ...unreachable, checks: { ...unreachable.checks, database: { ok: false, reason: 'no answer within 200 ms' } } } });
      }
      // One ledger read waits on the lock, not one per probe (a third probe joins it too).
      const waiting = async () =>
        (await locker.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relname = 'baton_migrations' AND NOT l.granted`,
          [schema],
        )).rows[0]!.n;
      await until(async () => (await waiting()) >= 1, 'the ledger read to wait on the lock');
      expect((await probe(app, '/readyz')).status).toBe(503);
      expect(await waiting()).toBe(1);
      expect((await probe(app, '/healthz')).status).toBe(200);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect((await probe(app, '/readyz')).status).toBe(200);
  });
});
