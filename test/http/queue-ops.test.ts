/**
 * Queue operations over HTTP on both drivers: pause/resume, delete, and bulk
 * retry/cancel/purge with dry runs; the admin token is needed, bad input is a 4xx
 * with a message and changes nothing.
 */
import { describe, expect, it } from 'vitest';
import type { Baton } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton } from '../helpers/db.js';

const ADMIN = 'admin-token';
const READ = 'read-token';

/** One request through the app, with a token and a JSON body; its status and JSON answer. */
async function send(app: ReturnType<typeof createHttpApp>, method: string, path: string, body?: unknown, token = ADMIN) {
  const response = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, any> };
}

/** Every job, by id. */
const everything = async (baton: Baton) => (await baton.listJobs({ limit: 1000 })).sort((a, b) => a.id - b.id);

describe('HTTP queue operations', () => {
  it('pause and resume a queue (admin token), listed by GET /api/queues; delete a job; bulk retry, cancel and purge with dry runs; bad input → 4xx, nothing changed', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { readToken: READ, adminToken: ADMIN });
    const jobs = await baton.enqueueMany([1, 2, 3].map((n) => ({ task: 'greet', payload: { n }, options: { queue: 'mail' } })));
    const [running] = await baton.store.jobClaim({ workerId: 'w', tasks: ['greet'], queues: ['mail'], limit: 1, leaseMs: 600_000, now: baton.clock.now() });
    const before = await everything(baton);

    // Refusals first: none of them changes anything.
    expect((await send(app, 'POST', '/api/queues/mail/pause', {}, READ)).status).toBe(403);
    expect(await send(app, 'POST', '/api/queues/mial/pause', {})).toMatchObject({ status: 404, json: { error: { code: 'not_found', message: expect.stringContaining('no queue named "mial"') } } });
    expect((await send(app, 'POST', '/api/queues/mail/pause', { force: 'yes' })).status).toBe(400);
    // A name whose percent-encoding is not UTF-8 (a lone surrogate's bytes) is refused, not taken literally.
    expect(await send(app, 'POST', '/api/queues/a%ED%A0%80b/pause', { force: true })).toMatchObject({ status: 400, json: { error: { code: 'validation', message: expect.stringContaining('/api/queues/a%ED%A0%80b/pause is not valid percent-encoded UTF-8') } } });
    expect((await send(app, 'POST', '/api/schedules/a%FFb/pause', {})).status).toBe(400);
    expect(await send(app, 'GET', '/api/jobs?queue=%FF', undefined, READ)).toMatchObject({ status: 400, json: { error: { message: expect.stringContaining('the URL query string ?queue=%FF is not valid percent-encoded UTF-8') } } });
    expect((await send(app, 'GET', '/api/jobs?task=%ED%A0%80', undefined, READ)).status).toBe(400);
    expect((await send(app, 'GET', '/api/jobs?queue=a+b%20c', undefined, READ)).status).toBe(200);
    expect(await send(app, 'POST', '/api/jobs/retry-many', {})).toMatchObject({ status: 400, json: { error: { message: expect.stringContaining('or { all: true }') } } });
    expect(await send(app, 'POST', '/api/jobs/retry-many', { state: 'completed' })).toMatchObject({ status: 400, json: { error: { issues: [{ path: ['state'] }] } } });
    expect(await send(app, 'POST', '/api/jobs/cancel-many', { queue: 'mail', createdBefore: '2030-02-30' })).toMatchObject({ status: 400, json: { error: { issues: [{ path: ['createdBefore'] }] } } });
    expect((await send(app, 'POST', '/api/jobs/purge', { all: true, reason: 'x' })).status).toBe(400);
    expect((await send(app, 'POST', '/api/jobs/purge', { queue: 'mail', createdBefore: '2030-01-01' })).status).toBe(400);
    expect((await send(app, 'POST', '/api/jobs/cancel-many', { queue: 'mail' }, READ)).status).toBe(403);
    expect((await send(app, 'DELETE', '/api/jobs/abc')).status).toBe(400);
    expect((await send(app, 'DELETE', '/api/jobs/987654')).status).toBe(404);
    expect(await send(app, 'DELETE', `/api/jobs/${running!.id}`)).toMatchObject({ status: 409, json: { error: { code: 'conflict', state: 'running' } } });
    expect(await everything(baton)).toEqual(before);
    expect((await baton.queues.list()).map((q) => [q.name, q.paused])).toEqual([['mail', false]]);
    expect((await send(app, 'GET', '/api/queues', undefined, READ)).json.queues).toEqual([expect.objectContaining({ queue: 'mail', paused: false, pausedAt: null })]);

    expect(await send(app, 'POST', '/api/queues/mail/pause')).toEqual({ status: 200, json: { queue: 'mail', paused: true, changed: true } });
    expect(await send(app, 'POST', '/api/queues/later/pause', { force: true })).toEqual({ status: 200, json: { queue: 'later', paused: true, changed: true } });
    const queues = (await send(app, 'GET', '/api/queues', undefined, READ)).json.queues as Array<Record<string, any>>;
    expect(queues.map((q) => [q.queue, q.paused, q.counts.queued, q.counts.running])).toEqual([['later', true, 0, 0], ['mail', true, 2, 1]]);
    expect(typeof queues[1]!.pausedAt).toBe('string');

    expect(await send(app, 'POST', '/api/jobs/cancel-many', { queue: 'mail', dryRun: true })).toEqual({ status: 200, json: { dryRun: true, matched: 3, cancelled: 0, requested: 0 } });
    expect(await send(app, 'POST', '/api/jobs/cancel-many', { queue: 'mail', reason: 'bulk', batchSize: 2 })).toEqual({ status: 200, json: { dryRun: false, matched: 3, cancelled: 2, requested: 1 } });
    expect((await baton.getJob(running!.id)).cancelReason).toBe('bulk');
    expect(await send(app, 'POST', '/api/jobs/retry-many', { state: 'cancelled', queue: 'mail', dryRun: true })).toEqual({ status: 200, json: { dryRun: true, matched: 2, retried: 0 } });
    expect(await send(app, 'POST', '/api/jobs/retry-many', { state: 'cancelled', queue: 'mail' })).toEqual({ status: 200, json: { dryRun: false, matched: 2, retried: 2 } });
    await baton.cancel(jobs[1]!.id);
    // A DELETE without a body needs no Content-Type (no form or CORS-simple request can send one).
    const bare = await app.request(`/api/jobs/${jobs[1]!.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } });
    expect({ status: bare.status, json: await bare.json() }).toEqual({ status: 200, json: { id: jobs[1]!.id, state: 'cancelled' } });
    const formLike = await app.request('/api/jobs/retry-many', { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/plain' }, body: '{"all":true}' });
    expect(formLike.status).toBe(415);
    await baton.cancel(jobs[2]!.id);
    expect(await send(app, 'POST', '/api/jobs/purge', { all: true, dryRun: true })).toEqual({ status: 200, json: { dryRun: true, matched: 1, deleted: 0 } });
    expect(await send(app, 'POST', '/api/jobs/purge', { finishedBefore: '2999-01-01T00:00:00Z' })).toEqual({ status: 200, json: { dryRun: false, matched: 1, deleted: 1 } });
    expect((await everything(baton)).map((j) => j.id)).toEqual([running!.id]);

    expect(await send(app, 'POST', '/api/queues/mail/resume')).toEqual({ status: 200, json: { queue: 'mail', paused: false, changed: true } });
    const doc = (await send(app, 'GET', '/api/openapi.json', undefined, READ)).json;
    for (const path of ['/api/queues/{name}/pause', '/api/queues/{name}/resume', '/api/jobs/retry-many', '/api/jobs/cancel-many', '/api/jobs/purge']) expect(doc.paths, path).toHaveProperty([path]);
    expect(doc.paths['/api/jobs/{id}']).toHaveProperty('delete');
  });
});
