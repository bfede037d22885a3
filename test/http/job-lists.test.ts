/**
 * Job lists carry previews, not values (issue 30, item 2): `GET /api/jobs?limit=50` of
 * jobs with ~10 MB payloads stays small, and the values come whole from the job's own
 * endpoints (`GET /api/jobs/:id` and the raw downloads `/payload`, `/result`,
 * `/checkpoint`; the job's answer carries a value over 64 KiB as its preview). Both drivers.
 */
import { describe, expect, it } from 'vitest';
import { PREVIEW_CHARS } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton } from '../helpers/db.js';

const MB = 1024 * 1024;

describe('job lists over HTTP', () => {
  it('a page of ~10 MB jobs stays small; the job, its payload and its result download whole', async () => {
    const baton = await openBaton({ payloadLimit: 11 * MB });
    const app = createHttpApp(baton);
    const payload = { blob: 'é'.repeat(5 * MB) }; // ~10 MB of JSON text
    const big = await baton.enqueue('big', payload, { queue: 'nobody' });
    await baton.enqueue('big', payload, { queue: 'nobody' });
    for (let i = 0; i < 20; i++) await baton.enqueue('small', { i }, { queue: 'nobody' });
    // A result too: the job run through the store (no worker serves these queues).
    const result = JSON.stringify({ rows: Array.from({ length: 50_000 }, (_, i) => i) });
    const withResult = await baton.enqueue('big', payload, { queue: 'done' });
    const now = baton.clock.now();
    const [claimed] = await baton.store.jobClaim({ workerId: 'w', tasks: ['big'], queues: ['done'], limit: 1, leaseMs: 60_000, now });
    await baton.store.jobCompleteMany({ items: [{ id: claimed!.id, token: claimed!.leaseToken, result }], now });

    const list = await app.request('/api/jobs?limit=50');
    const text = await list.text();
    expect(list.status).toBe(200);
    // 23 jobs: about 1 kB each, whatever their values hold (it was 10.5 MB per big job).
    expect(text.length).toBeLessThan(23 * 2048);
    const items = (JSON.parse(text) as { items: Array<Record<string, any>> }).items;
    expect(items).toHaveLength(23);
    const listed = items.find((j) => j.id === withResult.id)!;
    expect(listed).not.toHaveProperty('payload');
    expect(listed.payloadPreview).toEqual({ text: JSON.stringify(payload).slice(0, PREVIEW_CHARS), bytes: Buffer.byteLength(JSON.stringify(payload)), truncated: true });
    expect(listed.resultPreview).toMatchObject({ bytes: result.length, truncated: true });
    expect(listed.view).toBe('completed');
    expect(items.find((j) => j.task === 'small')!.payloadPreview).toMatchObject({ truncated: false });

    // The job's own answer embeds values up to 64 KiB; a larger one comes as its preview (issue 31 item 6).
    const detail = (await (await app.request(`/api/jobs/${withResult.id}`)).json()) as Record<string, any>;
    expect(detail.payload).toBeNull();
    expect(detail.payloadPreview).toEqual(listed.payloadPreview);
    expect(detail.result).toBeNull();
    expect(detail.resultPreview).toMatchObject({ bytes: result.length, truncated: true });
    expect(detail).toMatchObject({ checkpoint: null, checkpointPreview: null });
    const small = items.find((j) => j.task === 'small')!;
    expect(((await (await app.request(`/api/jobs/${small.id}`)).json()) as Record<string, any>)).toMatchObject({ payload: { i: 19 }, payloadPreview: null });
    expect(big.id).toBeLessThan(withResult.id);

    const download = await app.request(`/api/jobs/${withResult.id}/payload`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toMatch(/^application\/json/);
    expect(download.headers.get('content-disposition')).toBe(`attachment; filename="job-${withResult.id}-payload.json"`);
    expect(await download.text()).toBe(JSON.stringify(payload));
    expect(await (await app.request(`/api/jobs/${withResult.id}/result`)).text()).toBe(result);
    expect(await (await app.request(`/api/jobs/${withResult.id}/checkpoint`)).text()).toBe('null');
    expect((await app.request('/api/jobs/999999/payload')).status).toBe(404);
    expect((await app.request('/api/jobs/abc/payload')).status).toBe(400);
  });
});
