/**
 * The HTTP API (createHttpApp) on both drivers: every route, its auth rules, 4xx
 * answers for bad input (with a fuzz of malformed bodies), cancel of a job running
 * in another process, SSE, and one end-to-end run over a real listener.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTask, type Baton } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { spawnWorker } from '../helpers/child.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { createKit } from '../fixtures/kit.js';

const greet = defineTask('greet', {
  schema: z.object({ name: z.string().min(1) }),
  handler: async (payload) => ({ hello: payload.name }),
});
const boom = defineTask('explode', {
  maxAttempts: 1,
  handler: async () => {
    throw new Error('kaboom');
  },
});

type App = ReturnType<typeof createHttpApp>;

/** How many jobs the API lists (from a loopback host). */
async function listJobCount(app: App): Promise<number> {
  return ((await call(app, 'GET', '/api/jobs')).json as { items: unknown[] }).items.length;
}

async function call(app: App, method: string, path: string, init: { body?: unknown; raw?: string | Uint8Array; token?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  let body: string | Uint8Array | undefined = init.raw;
  if (init.body !== undefined && method !== 'GET') {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  } else if (method !== 'GET' && init.raw === undefined) {
    headers['content-type'] ??= 'application/json';
  }
  const response = await app.fetch(new Request(`http://localhost${path}`, { method, headers, ...(body === undefined ? {} : { body }) }));
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text, headers: response.headers };
}

async function setup(options: Parameters<typeof createHttpApp>[1] = {}) {
  const baton = await openBaton();
  const app = createHttpApp(baton, { tasks: [greet, boom], eventsInterval: 20, ...options });
  return { baton, app };
}

describe('HTTP API', () => {
  it('GET /healthz and /api/openapi.json; the document names every route', async () => {
    const { baton, app } = await setup();
    expect((await call(app, 'GET', '/healthz')).json).toEqual({ ok: true, driver: baton.store.driver });
    const doc = (await call(app, 'GET', '/api/openapi.json')).json;
    expect(doc.openapi).toBe('3.1.0');
    for (const path of ['/api/jobs', '/api/jobs/{id}', '/api/jobs/{id}/steps', '/api/jobs/{id}/messages', '/api/jobs/{id}/result', '/api/jobs/{id}/cancel', '/api/jobs/{id}/retry', '/api/jobs/{id}/promote', '/api/queues', '/api/workers', '/api/schedules', '/api/schedules/{name}/pause', '/api/services/{name}/trigger', '/api/events', '/metrics', '/healthz', '/readyz']) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
  });

  it('durable execution: the step log, messages to a job (201, 200 repeated, 404, 409, 400), and the result long-polled (200, 409, 202, 404)', async () => {
    const { baton, app } = await setup();
    const inbox = defineTask('inbox', {
      handler: async (_: null, ctx) => {
        const charged = await ctx.step('charge', () => ({ id: 'ch_1' }));
        const shipped = await ctx.receive<{ tracking: string }>('shipped');
        return { charged, tracking: shipped!.tracking };
      },
    });
    const worker = baton.worker({ tasks: [inbox, boom], concurrency: 2 });
    await worker.start();
    const waiting = waitForEvent(worker, 'job:waiting');
    const job = await baton.enqueue(inbox, null);
    await waiting;
    const steps = await call(app, 'GET', `/api/jobs/${job.id}/steps`);
    expect(steps.status).toBe(200);
    expect(steps.json.steps.map((s: { name: string; state: string }) => [s.name, s.state])).toEqual([['charge', 'completed'], ['baton:receive:shipped', 'waiting']]);
    expect(steps.json.steps[0]).toMatchObject({ seq: 1, attempt: 1, result: { id: 'ch_1' }, resultBytes: 13, error: null, until: null });
    expect((await call(app, 'GET', '/api/jobs/987654/steps')).status).toBe(404);

    const pending = await call(app, 'GET', `/api/jobs/${job.id}/result?wait=0`);
    expect(pending.status).toBe(202);
    expect(pending.json).toMatchObject({ id: job.id, view: 'waiting', wait: { kind: 'message', topic: 'shipped' } });
    expect((await call(app, 'GET', `/api/jobs/${job.id}/result?wait=30x`)).status).toBe(400);
    expect((await call(app, 'GET', `/api/jobs/${job.id}/result?wait=61s`)).status).toBe(400);

    const longPoll = call(app, 'GET', `/api/jobs/${job.id}/result?wait=30s`);
    const sent = await call(app, 'POST', `/api/jobs/${job.id}/messages`, { body: { topic: 'shipped', payload: { tracking: 'T-9' }, idempotencyKey: 'k' } });
    expect(sent.status).toBe(201);
    expect(sent.json).toMatchObject({ jobId: job.id, created: true });
    const answer = await longPoll;
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ charged: { id: 'ch_1' }, tracking: 'T-9' });
    expect((await call(app, 'GET', `/api/jobs/${job.id}/result`)).json).toEqual({ charged: { id: 'ch_1' }, tracking: 'T-9' }); // the download, as before

    const queued = await baton.enqueue(inbox, null, { delay: 60_000 });
    expect((await call(app, 'POST', `/api/jobs/${queued.id}/messages`, { body: { topic: 'shipped', payload: 1, idempotencyKey: 'k' } })).status).toBe(201);
    const again = await call(app, 'POST', `/api/jobs/${queued.id}/messages`, { body: { topic: 'shipped', payload: 2, idempotencyKey: 'k' } });
    expect([again.status, again.json.created]).toEqual([200, false]);
    expect((await call(app, 'POST', `/api/jobs/${job.id}/messages`, { body: { topic: 'shipped', payload: 1 } })).json.error.code).toBe('conflict');
    expect((await call(app, 'POST', '/api/jobs/987654/messages', { body: { topic: 'shipped', payload: 1 } })).status).toBe(404);
    for (const body of [{ topic: '', payload: 1 }, { topic: 'shipped', payload: null }, { topic: 'shipped' }, { topic: 'shipped', payload: 1, extra: true }]) {
      expect((await call(app, 'POST', `/api/jobs/${queued.id}/messages`, { body })).status, JSON.stringify(body)).toBe(400);
    }

    const failing = await baton.enqueue(boom, null);
    const failed = await call(app, 'GET', `/api/jobs/${failing.id}/result?wait=30s`);
    expect(failed.status).toBe(409);
    expect(failed.json.error).toMatchObject({ code: 'job_failed', message: expect.stringContaining('kaboom') });
    expect((await call(app, 'GET', '/api/jobs/987654/result?wait=1s')).status).toBe(404);
    await worker.stop();
  });

  it('enqueues, validates against the task schema, lists with filters and cursor, gets one job', async () => {
    const { app } = await setup();
    const created = await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'Ada' }, options: { queue: 'mail', priority: 2 } } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ task: 'greet', queue: 'mail', priority: 2, state: 'queued', view: 'queued', payload: { name: 'Ada' } });
    expect(typeof created.json.createdAt).toBe('string');

    const bad = await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 42 } } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('validation');
    expect(bad.json.error.message).toMatch(/name/);
    const unknown = await call(app, 'POST', '/api/jobs', { body: { task: 'nope' } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toMatch(/unknown task "nope"/);
    const delayed = await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'B' }, options: { runAt: '2999-01-01T00:00:00Z' } } });
    expect(delayed.json.view).toBe('delayed');

    for (let i = 0; i < 5; i++) await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: `n${i}` } } });
    const page1 = await call(app, 'GET', '/api/jobs?limit=3');
    expect(page1.json.items).toHaveLength(3);
    expect(page1.json.nextCursor).toBe(String(page1.json.items[2].id));
    const page2 = await call(app, 'GET', `/api/jobs?limit=3&cursor=${page1.json.nextCursor}`);
    const page3 = await call(app, 'GET', `/api/jobs?limit=3&cursor=${page2.json.nextCursor}`);
    const ids = [...page1.json.items, ...page2.json.items, ...page3.json.items].map((j: { id: number }) => j.id);
    expect(ids).toHaveLength(7);
    expect(new Set(ids).size).toBe(7);
    expect(page3.json.nextCursor).toBeNull();
    expect((await call(app, 'GET', '/api/jobs?queue=mail')).json.items.map((j: { id: number }) => j.id)).toEqual([created.json.id]);
    expect((await call(app, 'GET', '/api/jobs?state=running')).json.items).toEqual([]);
    expect((await call(app, 'GET', '/api/jobs?task=greet&state=queued')).json.items).toHaveLength(7);

    const one = await call(app, 'GET', `/api/jobs/${created.json.id}`);
    expect(one.json).toMatchObject({ id: created.json.id, view: 'queued' });
    expect((await call(app, 'GET', '/api/jobs/999999')).status).toBe(404);
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) expect((await call(app, 'GET', `/api/jobs/${bad}`)).status, bad).toBe(400);
    for (const q of ['state=bogus', 'limit=0', 'limit=1001', 'limit=x', 'cursor=abc', 'extra=1']) expect((await call(app, 'GET', `/api/jobs?${q}`)).status, q).toBe(400);
  });

  it('a known path with the wrong method → 405 with Allow, an unknown path → 404', async () => {
    const { app } = await setup();
    const wrong = await call(app, 'DELETE', '/api/queues');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
    expect(wrong.json.error).toEqual({ code: 'method_not_allowed', message: 'DELETE is not allowed on /api/queues; allowed: GET, HEAD' });
    const cancel = await call(app, 'GET', '/api/jobs/1/cancel');
    expect([cancel.status, cancel.headers.get('allow')]).toEqual([405, 'POST']);
    const jobs = await call(app, 'PUT', '/api/jobs');
    expect([jobs.status, jobs.headers.get('allow')]).toEqual([405, 'GET, HEAD, POST']);
    const none = await call(app, 'GET', '/api/nothing-here');
    expect([none.status, none.json.error.code, none.headers.get('allow')]).toEqual([404, 'not_found', null]);
  });

  it('without tasks, the Baton\'s own tasks decide; unknown names are accepted when it has none', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    expect((await call(app, 'POST', '/api/jobs', { body: { task: 'anything', payload: [1, 2] } })).status).toBe(201);
  });

  it('cancels a queued job, conflicts on a terminal one, retries a failed one, 409 on retry of a queued one', async () => {
    const { baton, app } = await setup();
    const job = (await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'x' } } })).json;
    const cancelled = await call(app, 'POST', `/api/jobs/${job.id}/cancel`, { body: { reason: 'no longer needed' } });
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({ outcome: 'cancelled', job: { state: 'cancelled', cancelReason: 'no longer needed' } });
    const again = await call(app, 'POST', `/api/jobs/${job.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: 'conflict', state: 'cancelled' });
    expect(again.json.error.message).toMatch(/already cancelled/);
    expect((await call(app, 'POST', '/api/jobs/424242/cancel')).status).toBe(404);
    expect((await call(app, 'POST', `/api/jobs/${job.id}/cancel`, { body: { reason: 5 } })).status).toBe(400);

    const retried = await call(app, 'POST', `/api/jobs/${job.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.json).toMatchObject({ id: job.id, state: 'queued' });
    const conflict = await call(app, 'POST', `/api/jobs/${job.id}/retry`);
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.message).toMatch(/queued/);

    const failing = (await call(app, 'POST', '/api/jobs', { body: { task: 'explode' } })).json;
    const worker = baton.worker({ tasks: [boom], pollInterval: 50 });
    const failed = waitForEvent(worker, 'job:failed', (e) => e.job.id === failing.id);
    await worker.start();
    await failed;
    await worker.stop();
    const detail = (await call(app, 'GET', `/api/jobs/${failing.id}`)).json;
    expect(detail).toMatchObject({ state: 'failed', errors: [{ attempt: 1, message: 'kaboom' }] });
    expect((await call(app, 'POST', `/api/jobs/${failing.id}/retry`)).json.state).toBe('queued');
  });

  it('retry with { fresh: true } clears the checkpoint (400 for a bad body); promote runs a delayed job now, 409 naming the state otherwise, 404 unknown', async () => {
    const { baton, app } = await setup();
    const resumable = defineTask('resumable', {
      maxAttempts: 1,
      handler: async (_payload: null, ctx) => {
        await ctx.saveCheckpoint({ step: 7 });
        throw new Error('stopped');
      },
    });
    const failing = await baton.enqueue(resumable, null);
    const worker = baton.worker({ tasks: [resumable], pollInterval: 50 });
    const failed = waitForEvent(worker, 'job:failed', (e) => e.job.id === failing.id);
    await worker.start();
    await failed;
    await worker.stop();
    expect((await call(app, 'POST', `/api/jobs/${failing.id}/retry`, { body: { fresh: 'yes' } })).status).toBe(400);
    expect((await call(app, 'POST', `/api/jobs/${failing.id}/retry`, { body: { fresh: false } })).json).toMatchObject({ state: 'queued', checkpoint: { step: 7 } });
    await baton.cancel(failing.id);
    const fresh = await call(app, 'POST', `/api/jobs/${failing.id}/retry`, { body: { fresh: true } });
    expect(fresh.status).toBe(200);
    expect(fresh.json).toMatchObject({ id: failing.id, state: 'queued', attempt: 0, checkpoint: null, progress: null });
    const timeline = (await call(app, 'GET', `/api/jobs/${failing.id}`)).json.timeline as Array<{ type: string; fresh?: boolean; summary: string }>;
    expect(timeline.filter((e) => e.type === 'retried').map((e) => e.fresh)).toEqual([false, true]);

    const delayed = (await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'x' }, options: { delay: 3_600_000 } } })).json;
    expect(delayed.view).toBe('delayed');
    const promoted = await call(app, 'POST', `/api/jobs/${delayed.id}/promote`);
    expect(promoted.status).toBe(200);
    expect(promoted.json).toMatchObject({ outcome: 'promoted', job: { id: delayed.id, state: 'queued', view: 'queued' } });
    expect(new Date(promoted.json.job.runAt).getTime()).toBeLessThan(new Date(delayed.runAt).getTime() - 3_000_000); // due now, not in an hour
    const again = await call(app, 'POST', `/api/jobs/${delayed.id}/promote`);
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: 'conflict', state: 'queued' });
    expect(again.json.error.message).toMatch(/is queued and already due; only a queued job waiting for a later runAt/);
    const done = await call(app, 'POST', `/api/jobs/${failing.id}/cancel`);
    expect(done.json.outcome).toBe('cancelled');
    expect((await call(app, 'POST', `/api/jobs/${failing.id}/promote`)).json.error).toMatchObject({ state: 'cancelled', message: expect.stringMatching(/is cancelled;/) });
    expect((await call(app, 'POST', '/api/jobs/424242/promote')).status).toBe(404);
    expect((await call(app, 'POST', '/api/jobs/abc/promote')).status).toBe(400);
  });

  it('GET /api/queues counts by state with 15 minutes of throughput; GET /api/workers lists live workers', async () => {
    const { baton, app } = await setup();
    for (let i = 0; i < 3; i++) await baton.enqueue(greet, { name: `g${i}` });
    await baton.enqueue(boom, {});
    await baton.enqueue(greet, { name: 'later' }, { queue: 'other', delay: 3_600_000 });
    const worker = baton.worker({ tasks: [greet, boom], pollInterval: 50 });
    let settled = 0;
    const done = new Promise<void>((resolve) => {
      const tick = () => ++settled === 4 && resolve();
      worker.on('job:completed', tick);
      worker.on('job:failed', tick);
    });
    await worker.start();
    await done;
    const workers = (await call(app, 'GET', '/api/workers')).json.workers;
    expect(workers).toEqual([expect.objectContaining({ id: worker.id, pid: process.pid, concurrency: worker.options.concurrency, queues: ['default'], running: [] })]);
    expect(typeof workers[0].host).toBe('string');
    expect(Date.parse(workers[0].lastHeartbeatAt)).toBeGreaterThanOrEqual(Date.parse(workers[0].startedAt));
    await worker.stop();
    expect((await call(app, 'GET', '/api/workers')).json.workers).toEqual([]);

    const queues = (await call(app, 'GET', '/api/queues')).json.queues;
    const main = queues.find((q: { queue: string }) => q.queue === 'default');
    expect(main.counts).toEqual({ queued: 0, running: 0, completed: 3, failed: 1, cancelled: 0 });
    expect(main.throughput).toHaveLength(15);
    expect(main.throughput.reduce((n: number, p: { completed: number }) => n + p.completed, 0)).toBe(3);
    expect(main.throughput.at(-1)).toMatchObject({ completed: 3, failed: 1 });
    const other = queues.find((q: { queue: string }) => q.queue === 'other');
    expect(other.counts.queued).toBe(1);
    expect(other.throughput.every((p: { completed: number; failed: number }) => p.completed === 0 && p.failed === 0)).toBe(true);
  });

  it('schedules and services: list, pause, resume, trigger; unknown names 404', async () => {
    const { baton, app } = await setup();
    await baton.schedule('nightly', { cron: '0 3 * * *', task: 'greet', payload: { name: 'night' } });
    expect((await call(app, 'GET', '/api/schedules')).json.schedules).toEqual([expect.objectContaining({ name: 'nightly', paused: false })]);
    expect((await call(app, 'POST', '/api/schedules/nightly/pause')).json.schedule.paused).toBe(true);
    expect((await call(app, 'POST', '/api/schedules/nightly/resume')).json.schedule.paused).toBe(false);
    const triggered = await call(app, 'POST', '/api/schedules/nightly/trigger');
    expect(triggered.json.job).toMatchObject({ task: 'greet', scheduleName: 'nightly', state: 'queued' });
    expect((await call(app, 'POST', '/api/schedules/nope/pause')).status).toBe(404);
    expect((await call(app, 'POST', '/api/schedules/nightly/explode')).status).toBe(404);

    await baton.store.serviceEnsure({ name: 'sweeper', now: Date.now() });
    expect((await call(app, 'GET', '/api/services')).json.services).toEqual([expect.objectContaining({ name: 'sweeper', paused: false })]);
    expect((await call(app, 'POST', '/api/services/sweeper/pause')).json.service.paused).toBe(true);
    expect((await call(app, 'POST', '/api/services/sweeper/resume')).json.service.paused).toBe(false);
    expect((await call(app, 'POST', '/api/services/sweeper/trigger')).json.service.nextRunAt).not.toBeNull();
    expect((await call(app, 'POST', '/api/services/ghost/trigger')).status).toBe(404);
  });

  it('GET /api/events streams a change event with counts and running jobs, then only heartbeats while nothing changes (a due job\'s growing latency is no change)', async () => {
    const { baton, app } = await setup({ eventsHeartbeat: 100 });
    await baton.enqueue(greet, { name: 'sse' });
    const controller = new AbortController();
    const response = await app.fetch(new Request('http://localhost/api/events', { signal: controller.signal }));
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = response.body!.getReader();
    let buffer = '';
    /** The next whole event (its text up to the blank line that ends it). */
    const nextEvent = async () => {
      while (!buffer.includes('\n\n')) buffer += new TextDecoder().decode((await reader.read()).value);
      const end = buffer.indexOf('\n\n') + 2;
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end);
      return event;
    };
    // A heartbeat may come first when the first read takes longer than 100 ms (a busy machine).
    let text = await nextEvent();
    while (text.startsWith(': heartbeat')) text = await nextEvent();
    const next = await nextEvent();
    expect(next).toMatch(/^: heartbeat\n\n/);
    controller.abort();
    await reader.cancel().catch(() => undefined);
    expect(text).toMatch(/^event: change\n/);
    const data = JSON.parse(/data: (.*)\n/.exec(text)![1]!);
    // No latency (it grows every poll): only changes make a change event.
    expect(data.counts).toEqual([{ queue: 'default', counts: { queued: 1, running: 0, completed: 0, failed: 0, cancelled: 0 }, paused: false, pausedAt: null, concurrency: null, rateLimit: null, keyRateLimit: null, sources: { concurrency: null, rateLimit: null, keyRateLimit: null }, declared: null, workers: 0, unservedTasks: [{ task: 'greet', jobs: 1 }] }]);
    expect(data.running).toEqual([]);
    expect(typeof data.at).toBe('string');
  });

  describe('auth', () => {
    const read = 'read-token-123';
    const admin = 'admin-token-456';
    const routes: Array<[string, string]> = [
      ['GET', '/api/jobs'],
      ['GET', '/api/jobs/1'],
      ['GET', '/api/queues'],
      ['GET', '/api/workers'],
      ['GET', '/api/schedules'],
      ['GET', '/api/services'],
      ['GET', '/api/openapi.json'],
      ['GET', '/metrics'],
      ['POST', '/api/jobs'],
      ['POST', '/api/jobs/1/cancel'],
      ['POST', '/api/jobs/1/retry'],
      ['POST', '/api/schedules/s/pause'],
      ['POST', '/api/schedules/s/resume'],
      ['POST', '/api/schedules/s/trigger'],
      ['POST', '/api/services/s/pause'],
      ['POST', '/api/services/s/resume'],
      ['POST', '/api/services/s/trigger'],
    ];

    const bodyFor = (path: string) => (path === '/api/jobs' ? { task: 'greet', payload: { name: 'a' } } : {});

    it('no token configured: every route is open', async () => {
      const { app } = await setup();
      await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'a' } } });
      for (const [method, path] of routes) expect([200, 201, 404, 409], `${method} ${path}`).toContain((await call(app, method, path, { body: bodyFor(path) })).status);
    });

    it('no token configured: a request for a non-loopback host name is refused (DNS rebinding), loopback names are served', async () => {
      const { app } = await setup();
      const at = (host: string, method = 'GET', path = '/api/jobs') =>
        app.fetch(new Request(`http://${host}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'GET' ? {} : { body: JSON.stringify({ task: 'greet', payload: { name: 'a' } }) }) }));
      for (const host of ['attacker.example:8092', 'example.com', '10.0.0.5:8080']) {
        expect((await at(host)).status, host).toBe(403);
        expect((await at(host, 'POST')).status, host).toBe(403);
      }
      for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080']) expect((await at(host)).status, host).toBe(200);
      expect(await listJobCount(app)).toBe(0);
    });

    it('tokens configured: missing/bad → 401, read token on GET ok and on writes 403, admin everywhere', async () => {
      const { app } = await setup({ readToken: read, adminToken: admin });
      await call(app, 'POST', '/api/jobs', { body: bodyFor('/api/jobs'), token: admin });
      for (const [method, path] of routes) {
        const what = `${method} ${path}`;
        const body = bodyFor(path);
        expect((await call(app, method, path, { body })).status, `${what} without token`).toBe(401);
        expect((await call(app, method, path, { body, token: 'wrong' })).status, `${what} bad token`).toBe(401);
        expect((await call(app, method, path, { body, token: `${admin}x` })).status, `${what} longer token`).toBe(401);
        const withRead = (await call(app, method, path, { body, token: read })).status;
        if (method === 'GET') expect([200, 404], `${what} read`).toContain(withRead);
        else expect(withRead, `${what} read`).toBe(403);
        expect([200, 201, 404, 409], `${what} admin`).toContain((await call(app, method, path, { body, token: admin })).status);
      }
      expect((await call(app, 'GET', '/healthz')).status).toBe(200);
      expect((await call(app, 'GET', '/api/jobs', { headers: { authorization: `Basic ${admin}` } })).status).toBe(401);
      const events = await app.fetch(new Request(`http://localhost/api/events?access_token=wrong`));
      expect(events.status).toBe(401);
    });

    it('writes need Content-Type application/json (415) and a same-host Origin (403)', async () => {
      const { app } = await setup();
      const form = await call(app, 'POST', '/api/jobs', { raw: 'task=greet', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(form.status).toBe(415);
      expect((await call(app, 'POST', '/api/jobs', { raw: '{"task":"greet"}', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
      expect((await call(app, 'POST', '/api/jobs', { raw: '{"task":"greet"}', headers: {} })).status).toBe(415);
      const foreign = await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'a' } }, headers: { origin: 'https://evil.example' } });
      expect(foreign.status).toBe(403);
      expect(foreign.json.error.message).toMatch(/cross-origin/);
      expect((await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'a' } }, headers: { origin: 'http://localhost' } })).status).toBe(201);
      expect((await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'a' } }, headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(201);
    });
  });

  it('fuzz: hundreds of malformed requests all get a 4xx, and the server still answers', async () => {
    const { app } = await setup({ bodyLimit: 64 * 1024 });
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const deep = (n: number, open: string, close: string) => open.repeat(n) + close.repeat(n);
    const valid = JSON.stringify({ task: 'greet', payload: { name: 'fuzz' }, options: { queue: 'q' } });
    const generators: Array<() => { raw: string | Uint8Array; type?: string }> = [
      () => ({ raw: randomBytes(rand(300) + 1) }),
      () => ({ raw: valid.slice(0, rand(valid.length - 1)) }),
      () => ({ raw: JSON.stringify({ task: [1, 2, 3][rand(3)], payload: { name: 'x' } }) }),
      () => ({ raw: JSON.stringify({ task: 'greet', payload: { name: [null, 5, true, {}, []][rand(5)] } }) }),
      () => ({ raw: JSON.stringify({ task: 'greet', payload: { name: 'x' }, options: { priority: [1e308, -1e308, 1.5, '3', null, 2 ** 60][rand(6)] } }) }),
      () => ({ raw: JSON.stringify({ task: 'greet', payload: { name: 'x' }, options: { maxAttempts: [0, -1, 1e9, 1.2][rand(4)], delay: [-5, 1e20, 'soon'][rand(3)] } }) }),
      () => ({ raw: JSON.stringify({ task: 'greet', payload: { name: 'x' }, options: { runAt: ['yesterday', '2020-13-45T00:00:00Z', 12, ''][rand(4)] } }) }),
      () => ({ raw: deep(5000 + rand(20000), '[', ']') }),
      () => ({ raw: `{"task":"greet","payload":${deep(200 + rand(2000), '{"a":', '}').replace(/}+$/, (m) => `1${m}`)}}` }),
      () => ({ raw: ['null', 'true', '42', '"str"', '[]', '1e999', '-0', '{}'][rand(8)]! }),
      () => ({ raw: valid, type: ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', '', 'application/jsonx'][rand(5)]! }),
      () => ({ raw: `{"task":"greet","payload":{"name":"${'x'.repeat(70 * 1024)}"}}` }),
      () => ({ raw: JSON.stringify({ task: 'greet', payload: { name: 'x' }, extra: 1 }) }),
      () => ({ raw: JSON.stringify({ task: 'greet', payload: { name: 'x\u0000y' } }) }),
      () => ({ raw: '\uFEFF' + valid.replace('{', '{,') }),
      () => ({ raw: JSON.stringify({ task: 'x'.repeat(5000) }) }),
    ];
    const paths = ['/api/jobs', '/api/jobs/1/cancel', '/api/jobs/abc/cancel', '/api/jobs/1/retry', '/api/schedules/x/pause', '/api/services/%ZZ/trigger'];
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const { raw, type } = generators[i % generators.length]!();
      const path = i % 3 === 0 ? paths[rand(paths.length)]! : '/api/jobs';
      const response = await app.fetch(new Request(`http://localhost${path}`, { method: 'POST', body: raw, headers: type === undefined ? { 'content-type': 'application/json' } : type ? { 'content-type': type } : {} }));
      const text = await response.text();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, `request ${i} to ${path}: ${text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
      expect(response.status, `request ${i} to ${path}: ${text.slice(0, 200)}`).toBeLessThan(500);
      expect(JSON.parse(text).error.message.length).toBeGreaterThan(0);
    }
    expect(statuses.get(413)).toBeGreaterThan(0);
    expect(statuses.get(415)).toBeGreaterThan(0);
    expect(statuses.get(400)).toBeGreaterThan(0);
    expect((await call(app, 'POST', '/api/jobs', { body: { task: 'greet', payload: { name: 'after' } } })).status).toBe(201);
    expect((await call(app, 'GET', '/healthz')).status).toBe(200);
  });

  it('cancel through the API reaches the signal of a job running in another process', async () => {
    const db = tempDatabase();
    const baton: Baton = await openBaton({ database: db.url });
    const kit = createKit();
    const app = createHttpApp(baton, { tasks: kit.tasks });
    const child = await spawnWorker({ database: db.url, worker: { pollInterval: 50, cancelPollInterval: 100 } });
    const job = (await call(app, 'POST', '/api/jobs', { body: { task: 'sleepy', payload: { ms: 60_000 } } })).json;
    await child.waitForEvent('job:claimed', job.id);
    const answer = await call(app, 'POST', `/api/jobs/${job.id}/cancel`, { body: { reason: 'from the API' } });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ outcome: 'requested', job: { state: 'running', view: 'cancelling' } });
    const aborted = await child.waitForEvent('job:aborted', job.id);
    expect(aborted.reason).toBe('cancelled');
    await child.waitForEvent('job:cancelled', job.id);
    expect((await call(app, 'GET', `/api/jobs/${job.id}`)).json).toMatchObject({ state: 'cancelled', cancelReason: 'from the API' });
  });

  it('end to end over a real listener (@hono/node-server on port 0)', async () => {
    const { baton, app } = await setup({ adminToken: 'adm' });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const headers = { authorization: 'Bearer adm', 'content-type': 'application/json' };
      const created = await fetch(`${base}/api/jobs`, { method: 'POST', headers, body: JSON.stringify({ task: 'greet', payload: { name: 'net' } }) });
      expect(created.status).toBe(201);
      const job = (await created.json()) as { id: number };
      const worker = baton.worker({ tasks: [greet], pollInterval: 50 });
      const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
      await worker.start();
      await completed;
      const got = (await (await fetch(`${base}/api/jobs/${job.id}`, { headers })).json()) as { state: string; result: unknown };
      expect(got).toMatchObject({ state: 'completed', result: { hello: 'net' } });
      const big = await fetch(`${base}/api/jobs`, { method: 'POST', headers, body: 'x'.repeat(2 * 1024 * 1024) });
      expect(big.status).toBe(413);
      const metrics = await (await fetch(`${base}/metrics`, { headers })).text();
      expect(metrics).toMatch(/baton_jobs_completed_total\{queue="default",task="greet"\} 1/);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
