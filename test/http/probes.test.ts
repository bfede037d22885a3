/**
 * The orchestrator probes (issue 13, item 3) on both drivers: `/healthz` answers
 * whenever the process does; `/readyz` is 200 only while the database answers, the
 * schema is current and every worker of the process runs — a stopping worker turns
 * not ready the moment its stop begins, while it drains.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, defineTask, type Readiness } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { rawQuery } from '../helpers/raw.js';

type App = ReturnType<typeof createHttpApp>;

/** GET `path` from a loopback host, without a token: status, JSON body and Cache-Control. */
async function probe(app: App, path: '/healthz' | '/readyz') {
  const response = await app.fetch(new Request(`http://localhost${path}`));
  return { status: response.status, json: (await response.json()) as Readiness & { ok?: boolean }, cache: response.headers.get('cache-control') };
}

describe('probes', () => {
  it('/readyz: 503 before the worker starts, 200 while it runs, 503 from the moment stop() begins while a gated job drains (before it is released); /healthz 200 throughout', async () => {
    const baton = await openBaton();
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const gated = defineTask('gated', { handler: async () => gate.then(() => 'done') });
    const worker = baton.worker({ tasks: [gated], drainTimeout: 120_000 });
    const app = createHttpApp(baton);

    const before = await probe(app, '/readyz');
    expect(before.status).toBe(503);
    expect(before.json).toEqual({ ready: false, failed: ['worker'], checks: { database: { ok: true }, schema: { ok: true }, worker: { ok: false, reason: 'worker new' } } });

    await worker.start();
    const running = await probe(app, '/readyz');
    expect(running).toEqual({ status: 200, json: { ready: true, failed: [], checks: { database: { ok: true }, schema: { ok: true }, worker: { ok: true } } }, cache: 'no-store' });

    const job = await baton.enqueue(gated, null);
    await waitForEvent(worker, 'job:claimed', (e) => e.job.id === job.id);
    const stopped = worker.stop();
    const stopping = await probe(app, '/readyz');
    expect(stopping.status).toBe(503);
    expect(stopping.json).toMatchObject({ ready: false, failed: ['worker'], checks: { database: { ok: true }, worker: { ok: false, reason: 'worker stopping' } } });
    expect(await probe(app, '/healthz')).toEqual({ status: 200, json: { ok: true, driver: baton.store.driver }, cache: 'no-store' });
    // Still draining: the job runs on, neither finished nor released.
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'running', attempt: 1 });

    openGate();
    expect(await stopped).toMatchObject({ finished: 1, released: 0 });
    expect((await probe(app, '/readyz')).json.checks.worker).toEqual({ ok: false, reason: 'worker stopped' });
    expect((await probe(app, '/healthz')).status).toBe(200);
  });

  it('without workers (baton serve) /readyz checks the database and the schema: 503 naming "schema" once the schema lacks a migration of the code; /healthz stays 200', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const app = createHttpApp(baton);
    expect(await probe(app, '/readyz')).toMatchObject({ status: 200, json: { ready: true, failed: [], checks: { database: { ok: true }, schema: { ok: true } } } });
    expect((await probe(app, '/readyz')).json.checks).not.toHaveProperty('worker');

    // The schema falls behind the code: its latest migration is no longer recorded.
    const [latest] = await rawQuery<{ version: number }>(db, 'SELECT MAX(version) AS version FROM baton_migrations');
    await rawQuery(db, 'DELETE FROM baton_migrations WHERE version = ?', [latest!.version]);
    const behind = await probe(app, '/readyz');
    expect(behind.status).toBe(503);
    expect(behind.json).toEqual({ ready: false, failed: ['schema'], checks: { database: { ok: true }, schema: { ok: false, reason: 'the schema lacks a migration of this code: run baton migrate' } } });
    expect((await probe(app, '/healthz')).status).toBe(200);
  });

  it('/readyz is 503 naming "schema" once a newer breaking migration is recorded (a newer release migrated the database)', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const app = createHttpApp(baton);
    expect((await probe(app, '/readyz')).status).toBe(200);
    await (db.driver === 'sqlite'
      ? rawQuery(db, 'INSERT INTO baton_migrations (version, name, breaking, applied_at) VALUES (?, ?, ?, ?)', [9999, 'from-the-future', 1, Date.now()])
      : rawQuery(db, 'INSERT INTO baton_migrations (version, name, breaking) VALUES (?, ?, ?)', [9999, 'from-the-future', true]));
    expect(await probe(app, '/readyz')).toMatchObject({
      status: 503,
      json: { ready: false, failed: ['schema'], checks: { database: { ok: true }, schema: { ok: false, reason: 'the schema is newer than this code: upgrade baton-jobs' } } },
    });
  });

  it('the probes need no token when tokens are set; a readyTimeout out of range is a ConfigError', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { adminToken: 'admin-token', readToken: 'read-token' });
    expect((await probe(app, '/readyz')).status).toBe(200);
    expect((await probe(app, '/healthz')).status).toBe(200);
    expect((await app.fetch(new Request('http://localhost/api/jobs'))).status).toBe(401);
    for (const readyTimeout of [0, 1.5, -1, 2 ** 31]) expect(() => createHttpApp(baton, { readyTimeout })).toThrow(ConfigError);
    await expect(baton.readiness({ timeoutMs: 0 })).rejects.toThrow(/readiness timeout must be an integer/);
  });
});
