/**
 * The job detail of the HTTP API carries the job's stored timeline (issue 13), on both
 * drivers: a cancel through the API is recorded as asked by "http" (a bulk one as
 * "http (cancel-many)"), the entries come in order as JSON (ISO times), and lists leave
 * the timeline out.
 */
import { describe, expect, it } from 'vitest';
import { createHttpApp } from 'baton-jobs/http';
import { testDriver } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';

describe(`GET /api/jobs/:id timeline (${testDriver})`, () => {
  it('tells the story of a job cancelled through the API while running, naming "http"; cancel-many names itself', async () => {
    const { baton, kit } = await openKitBaton();
    const worker = baton.worker({ tasks: kit.tasks, concurrency: 1 });
    await worker.start();
    const app = createHttpApp(baton, { tasks: kit.tasks });
    const post = (path: string, body: unknown) => app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

    const claimed = waitForEvent(worker, 'job:claimed');
    const job = await baton.enqueue(kit.sleepy, { ms: 3_600_000 });
    await claimed;
    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === job.id);
    expect((await post(`/api/jobs/${job.id}/cancel`, { reason: 'from the api' })).status).toBe(200);
    await cancelled;

    const detail = (await (await app.request(`/api/jobs/${job.id}`)).json()) as { state: string; timeline: Array<Record<string, unknown>> };
    expect(detail.state).toBe('cancelled');
    expect(detail.timeline.map((e) => [e.type, e.attempt, e.worker])).toEqual([
      ['enqueued', null, null],
      ['started', 1, worker.id],
      ['cancelRequested', 1, worker.id],
      ['cancelled', 1, worker.id],
    ]);
    expect(detail.timeline[2]).toMatchObject({ by: 'http', reason: 'from the api', summary: 'cancel requested by http: from the api' });
    const times = detail.timeline.map((e) => e.at as string);
    expect(times.map((t) => new Date(t).toISOString())).toEqual(times);
    expect([...times].sort()).toEqual(times);

    const parked = await baton.enqueue(kit.sleepy, { ms: 1 }, { queue: 'parked' });
    const bulk = await post('/api/jobs/cancel-many', { queue: 'parked', reason: 'tidy up' });
    expect(((await bulk.json()) as { cancelled: number }).cancelled).toBe(1);
    const parkedDetail = (await (await app.request(`/api/jobs/${parked.id}`)).json()) as { timeline: Array<Record<string, unknown>> };
    expect(parkedDetail.timeline.map((e) => e.type)).toEqual(['enqueued', 'cancelRequested', 'cancelled']);
    expect(parkedDetail.timeline[1]).toMatchObject({ by: 'http (cancel-many)', reason: 'tidy up', attempt: null, worker: null });

    const list = (await (await app.request('/api/jobs')).json()) as { items: Array<Record<string, unknown>> };
    expect(list.items.map((j) => j.id)).toContain(job.id);
    for (const item of list.items) expect(item).not.toHaveProperty('timeline');
  });
});
