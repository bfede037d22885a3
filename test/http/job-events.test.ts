/**
 * Per-job live events (issue 30 item 9): `GET /api/events?job=ID` follows one job, on
 * both drivers, with the worker in this process or in another one. Every wait is on the
 * events the stream delivers (or a gate the test opens), never a sleep.
 */
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { spawnWorker } from '../helpers/child.js';
import { openBaton } from '../helpers/db.js';
import { openKitBaton } from '../helpers/kit-baton.js';
import { merged, sseReader } from '../helpers/sse.js';

/** A promise plus its resolve function. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('GET /api/events?job=ID', () => {
  it('follows a job run by a worker of this process: queued → claimed → progress → completed, then `end`, sending only what changed', async () => {
    const baton = await openBaton();
    const gate = deferred();
    const report = defineTask('report', {
      handler: async (_: { title: string }, ctx) => {
        ctx.progress(1, 3, 'one');
        await gate.promise;
        return { pages: 3 };
      },
    });
    const app = createHttpApp(baton, { tasks: [report], eventsInterval: 50 });
    const job = await baton.enqueue(report, { title: 'Q3' });
    const response = await app.request(`/api/events?job=${job.id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const stream = sseReader(response);

    const first = await stream.next();
    expect(first!.event).toBe('job');
    expect(first!.data.job).toMatchObject({ id: job.id, state: 'queued', view: 'queued', task: 'report', attempt: 0, progress: null });
    expect(first!.data.job).not.toHaveProperty('payload'); // it never changes: GET /api/jobs/:id has it
    expect(first!.data.timeline.map((e: { type: string }) => e.type)).toEqual(['enqueued']);
    expect(typeof first!.data.at).toBe('string');

    const worker = baton.worker({ tasks: [report], progressInterval: 0 });
    await worker.start();
    const running = await stream.until((e) => e.data.job?.state === 'running', 'running');
    expect(running.data.job).toMatchObject({ id: job.id, attempt: 1, leaseOwner: worker.id });
    expect(running.data.timeline.map((e: { type: string }) => e.type)).toEqual(['enqueued', 'started']);
    expect(running.data.job).not.toHaveProperty('task'); // only what changed (and the id)
    expect((await stream.reach((job) => job.progress !== null, 'progress')).progress).toEqual({ current: 1, total: 3, message: 'one' });

    gate.resolve();
    const completed = await stream.until((e) => e.data.job?.state === 'completed', 'completed');
    expect(completed.data.job).toMatchObject({ view: 'completed', result: { pages: 3 } });
    expect(completed.data.timeline.map((e: { type: string }) => e.type)).toEqual(['enqueued', 'started', 'completed']);
    const end = await stream.next();
    expect(end).toMatchObject({ event: 'end', data: { reason: 'terminal', state: 'completed' } });
    expect(await stream.next()).toBeNull(); // the server closed the stream
    // Every event changed something; the merged job is the job as GET /api/jobs/:id answers it, payload (and its preview) aside.
    const detail = (await (await app.request(`/api/jobs/${job.id}`)).json()) as Record<string, unknown>;
    const { payload: _, payloadPreview: _preview, ...rest } = detail;
    expect(merged(stream.seen)).toEqual(rest);
    for (const sse of stream.seen.filter((e) => e.event === 'job').slice(1)) expect(Object.keys(sse.data.job).length + (sse.data.timeline ? 1 : 0)).toBeGreaterThan(1);
  });

  it('follows a job run by a worker in another process, through its checkpoints and progress, to completed', async () => {
    const { db, baton, kit } = await openKitBaton();
    const app = createHttpApp(baton, { tasks: kit.tasks, eventsInterval: 50 });
    const job = await baton.enqueue(kit.steps, { steps: 3, stepMs: 1000 });
    const stream = sseReader(await app.request(`/api/events?job=${job.id}`));
    expect((await stream.next())!.data.job.state).toBe('queued');
    const child = await spawnWorker({ database: db.url, worker: { concurrency: 1, progressInterval: 0 } });
    const running = await stream.until((e) => e.data.job?.state === 'running', 'running');
    expect(running.data.job.leaseOwner).toMatch(new RegExp(`:${child.pid}:`));
    const during = await stream.reach((job) => job.state !== 'running' || job.progress !== null, 'progress while running');
    expect(during).toMatchObject({ state: 'running', progress: { total: 3 }, checkpoint: { step: expect.any(Number) } });
    await stream.until((e) => e.data.job?.state === 'completed', 'completed');
    expect(merged(stream.seen)).toMatchObject({ progress: { current: 3, total: 3 }, checkpoint: { step: 3 }, result: { resumedFrom: 0, steps: 3, pid: child.pid } });
    expect((await stream.next())!.event).toBe('end');
    child.kill();
  });

  it('answers 404 for an unknown job and 400 for a bad id, before any stream; ends with `deleted` when the job is deleted while followed', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { eventsInterval: 50 });
    const unknown = await app.request('/api/events?job=999999');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/json/);
    expect(((await unknown.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'not_found', message: expect.stringMatching(/no job with id 999999/) });
    expect((await app.request('/api/events?job=abc')).status).toBe(400);
    expect((await app.request('/api/events?job=0')).status).toBe(400);

    const job = await baton.enqueue('anything', { x: 1 });
    const stream = sseReader(await app.request(`/api/events?job=${job.id}`));
    expect((await stream.next())!.data.job.state).toBe('queued');
    await baton.jobs.delete(job.id);
    expect(await stream.next()).toMatchObject({ event: 'end', data: { reason: 'deleted' } });
    expect(await stream.next()).toBeNull();
  });

  it('a finished job: its state and `end` at once', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { eventsInterval: 50 });
    const job = await baton.enqueue('anything', null);
    await baton.cancel(job.id, 'not needed');
    const stream = sseReader(await app.request(`/api/events?job=${job.id}`));
    const first = await stream.next();
    expect(first!.data.job).toMatchObject({ state: 'cancelled', cancelReason: 'not needed' });
    expect(first!.data.timeline.map((e: { type: string }) => e.type)).toEqual(['enqueued', 'cancelRequested', 'cancelled']);
    expect(await stream.next()).toMatchObject({ event: 'end', data: { reason: 'terminal', state: 'cancelled' } });
    expect(await stream.next()).toBeNull();
  });
});
