/**
 * `baton.queues.setRateLimit` (issue 12), and its HTTP and CLI adapters, on both
 * drivers: set, change and remove a queue's and a per-key rate; bad rates and unknown
 * queues are refused naming the problem, with nothing written; `list()`,
 * `GET /api/queues` and `baton queues` show each rate with its window. That claims honour
 * it is the conformance suite's and test/e2e/rate-limits.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, NotFoundError, ValidationError } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { runCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { jsonPut } from '../helpers/http.js';
import { waitForEvent } from '../helpers/events.js';

const quick = defineTask('quick', { handler: async () => 'ok' });

describe('queue rate limits', () => {
  it('library: set, change, remove each scope; bad rates and unknown queues refused with nothing written; list shows the window', async () => {
    const writes: string[] = [];
    const baton = await openBaton({}, (op) => void (op === 'queueSetRateLimit' && writes.push(op)));
    await baton.enqueue(quick, {}, { queue: 'known' });
    const bad: unknown[] = [{ limit: 0, periodMs: 1000 }, { limit: 10_001, periodMs: 1000 }, { limit: 1.5, periodMs: 1000 }, { limit: 5, periodMs: 0 },
      { limit: 5, periodMs: 604_800_001 }, { limit: 5 }, { limit: 5, periodMs: 1000, burst: 2 }, 5, '5/1s', undefined];
    for (const rate of bad) {
      const error = await baton.queues.setRateLimit('known', rate as never).catch((e: unknown) => e);
      expect(error, JSON.stringify(rate)).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(/invalid rate limit \(\{ limit: 1\.\.10000, periodMs: 1\.\.604800000 \}, or null for none\)/);
    }
    await expect(baton.queues.setRateLimit('known', null, { perkey: true } as never)).rejects.toThrow(/invalid rate limit options/);
    expect(await baton.queues.setRateLimit('typo', { limit: 1, periodMs: 1000 }).catch((e: unknown) => e)).toBeInstanceOf(NotFoundError);
    expect(writes).toEqual([]);
    expect((await baton.queues.list()).map((q) => [q.rateLimit, q.keyRateLimit])).toEqual([[null, null]]);

    const rate = { limit: 100, periodMs: 60_000 };
    expect(await baton.queues.setRateLimit('known', rate)).toEqual({ queue: 'known', perKey: false, rate, changed: true });
    expect(await baton.queues.setRateLimit('known', rate)).toEqual({ queue: 'known', perKey: false, rate, changed: false });
    expect(await baton.queues.setRateLimit('known', { limit: 2, periodMs: 500 }, { perKey: true })).toMatchObject({ perKey: true, changed: true });
    const [info] = await baton.queues.list();
    expect(info).toMatchObject({ rateLimit: { limit: 100, periodMs: 60_000, used: 0, nextAt: null }, keyRateLimit: { limit: 2, periodMs: 500, used: 0, nextAt: null } });
    expect(await baton.queues.setRateLimit('known', null)).toEqual({ queue: 'known', perKey: false, rate: null, changed: true });
    expect((await baton.queues.list())[0]).toMatchObject({ rateLimit: null, keyRateLimit: { limit: 2 } });
  });

  it('a full window shows used = limit and when the next start is allowed; the worker starts it then, not at its next poll', async () => {
    const baton = await openBaton();
    await baton.queues.setRateLimit('q', { limit: 2, periodMs: 1500 }, { force: true });
    const jobs = await baton.enqueueMany([1, 2, 3].map(() => ({ task: quick, payload: {}, options: { queue: 'q' } })));
    const worker = baton.worker({ tasks: [quick], queues: ['q'], concurrency: 4, pollInterval: 3_600_000 });
    const two = Promise.all(jobs.slice(0, 2).map((job) => waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id)));
    const third = waitForEvent(worker, 'job:completed', (e) => e.job.id === jobs[2]!.id);
    await worker.start();
    await two;
    const [info] = await baton.queues.list();
    expect(info!.rateLimit).toMatchObject({ limit: 2, used: 2 });
    const first = (await baton.getJob(jobs[0]!.id)).startedAt!.getTime();
    expect(info!.rateLimit!.nextAt!.getTime()).toBe(first + 1500);
    await third; // the poll is an hour away: the window's wake-up claimed it
    expect((await baton.getJob(jobs[2]!.id)).startedAt!.getTime()).toBeGreaterThanOrEqual(first + 1500);
    await worker.stop();
  });

  it('HTTP: PUT /api/queues/:name/rate-limit (admin token) sets and removes it; GET /api/queues shows it; bad input → 4xx, nothing changed', async () => {
    const baton = await openBaton();
    await baton.enqueue(quick, {}, { queue: 'mail' });
    const app = createHttpApp(baton, { readToken: 'r', adminToken: 'a' });
    const put = jsonPut(app);
    const rate = { limit: 10, periodMs: 1000 };
    expect((await put('/api/queues/mail/rate-limit', { rate }, 'r')).status).toBe(403);
    expect(await put('/api/queues/mail/rate-limit', { rate: { limit: 0, periodMs: 1000 } })).toMatchObject({ status: 400, json: { error: { code: 'validation', message: expect.stringContaining('invalid rate limit') } } });
    expect((await put('/api/queues/mail/rate-limit', { rate, extra: 1 })).status).toBe(400);
    expect((await put('/api/queues/mial/rate-limit', { rate })).status).toBe(404);
    expect((await baton.queues.list())[0]!.rateLimit).toBeNull();
    expect(await put('/api/queues/mail/rate-limit', { rate, perKey: true })).toEqual({ status: 200, json: { queue: 'mail', perKey: true, rate, changed: true } });
    const listed = await app.request('/api/queues', { headers: { authorization: 'Bearer r' } });
    const [queue] = ((await listed.json()) as { queues: Array<Record<string, unknown>> }).queues;
    expect(queue).toMatchObject({ queue: 'mail', rateLimit: null, keyRateLimit: { limit: 10, periodMs: 1000, used: 0, nextAt: null } });
    expect(await put('/api/queues/mail/rate-limit', { rate: null, perKey: true })).toMatchObject({ status: 200, json: { rate: null, changed: true } });
  });

  it('CLI: baton queue rate NAME LIMIT PERIOD_MS|none [--per-key]; baton queues shows the window; bad values exit 2 with one line and change nothing', async () => {
    const db = tempDatabase();
    const d = ['--database', db.url];
    const baton = await openBaton({ database: db.url });
    await baton.enqueue(quick, {}, { queue: 'mail' });
    const bad = await Promise.all([
      runCli(['queue', 'rate', 'mail', '0', '1000', ...d]),
      runCli(['queue', 'rate', 'mail', '10', ...d]),
      runCli(['queue', 'rate', 'mail', 'none', '1000', ...d]),
      runCli(['queue', 'rate', 'mail', '10', '0', ...d]),
    ]);
    for (const result of bad) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(bad[1]!.stderr).toMatch(/give the period in ms after the limit/);
    const typo = await runCli(['queue', 'rate', 'mial', '10', '1000', ...d]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/no queue named "mial"/);
    expect((await baton.queues.list())[0]!.rateLimit).toBeNull();

    const set = await runCli(['queue', 'rate', 'mail', '10', '1000', ...d]);
    expect(set).toMatchObject({ code: 0 });
    expect(set.stdout).toContain('queue mail: at most 10 starts per 1000 ms across the fleet');
    expect((await runCli(['queue', 'rate', 'mail', '2', '500', '--per-key', ...d])).stdout).toContain('queue mail (each key): at most 2 starts per 500 ms');
    const listed = await runCli(['queues', ...d]);
    expect(listed.stdout).toMatch(/mail\s+active\s+1\s+\S+\s+0\s+0\/10 per 1000ms, key 0\/2 per 500ms/);
    const cleared = await runCli(['queue', 'rate', 'mail', 'none', '--json', ...d]);
    expect(JSON.parse(cleared.stdout)).toEqual({ queue: 'mail', perKey: false, rate: null, changed: true });
  });
});
