/**
 * The probes of `baton worker --http` and `baton serve` over real HTTP (issue 13,
 * item 3), both drivers: a worker is ready once it runs and not ready from its first
 * SIGTERM on, while it drains; /healthz answers throughout.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Readiness } from 'baton-jobs';
import { spawnCli, stdoutOf } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';

const STUBBORN = fileURLToPath(new URL('../fixtures/tasks-stubborn.ts', import.meta.url));

async function get(url: string): Promise<{ status: number; json: Readiness & { ok?: boolean } }> {
  const response = await fetch(url);
  return { status: response.status, json: (await response.json()) as Readiness & { ok?: boolean } };
}

describe('probes of the CLI', () => {
  it('worker --http: /readyz 200 once it runs; after SIGTERM 503 naming "worker" while a job drains (still running), /healthz 200; a second SIGTERM releases the job and it exits 0', async () => {
    const db = tempDatabase();
    const worker = spawnCli(['worker', '--tasks', STUBBORN, '--database', db.url, '--http', '0', '--drain-timeout', '120000', '--abort-grace', '120000', '--json']);
    const url = String((await worker.waitFor((m) => m.event === 'http:listening', 'http:listening')).url);
    expect(await get(`${url}/readyz`)).toEqual({ status: 200, json: { ready: true, failed: [], checks: { database: { ok: true }, schema: { ok: true }, worker: { ok: true } } } });

    const baton = await openBaton({ database: db.url });
    const job = await baton.enqueue('stubborn', { ms: 250 });
    await worker.waitFor((m) => m.event === 'job:checkpoint' && m.jobId === job.id, 'a checkpoint');
    worker.kill('SIGTERM');
    // The JSON line says what the stop drains (running) and hands back at once (waiting: claimed ahead).
    expect(await worker.waitFor((m) => m.event === 'worker:stopping', 'worker:stopping')).toMatchObject({ signal: 'SIGTERM', running: 1, waiting: 0 });
    const draining = await get(`${url}/readyz`);
    expect(draining.status).toBe(503);
    expect(draining.json).toMatchObject({ ready: false, failed: ['worker'], checks: { database: { ok: true }, schema: { ok: true }, worker: { ok: false, reason: 'worker stopping' } } });
    expect((await get(`${url}/healthz`)).status).toBe(200);
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'running' });

    // A repeat within 200 ms of the first signal is dropped as npm's duplicate (signals.ts):
    // two checkpoints (every 250 ms) after stopping put the second SIGTERM well past it.
    const stoppingAt = worker.messages.findIndex((m) => m.event === 'worker:stopping');
    await worker.waitFor(() => worker.messages.slice(stoppingAt).filter((m) => m.event === 'job:checkpoint').length >= 2, 'two checkpoints while draining');
    worker.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
    expect(worker.messages.find((m) => m.event === 'job:released')).toMatchObject({ jobId: job.id });
  });

  it('serve: /readyz checks the database and the schema (no worker check), /healthz 200, no token needed with tokens set', async () => {
    const db = tempDatabase();
    const server = spawnCli(['serve', '--port', '0', '--database', db.url, '--admin-token', 'secret']);
    await server.waitFor((m) => m.type === 'text' && String(m.text).startsWith('baton serving '), 'the serving line');
    const url = /^baton serving (\S+)/.exec(stdoutOf(server))![1]!;
    expect(await get(`${url}/readyz`)).toEqual({ status: 200, json: { ready: true, failed: [], checks: { database: { ok: true }, schema: { ok: true } } } });
    expect(await get(`${url}/healthz`)).toMatchObject({ status: 200, json: { ok: true } });
    expect((await fetch(`${url}/api/jobs`)).status).toBe(401);
    server.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  });
});
