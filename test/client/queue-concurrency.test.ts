/**
 * `baton.queues.setConcurrency` (issue 12), and its HTTP and CLI adapters, on both
 * drivers: set, change and remove a fleet-wide limit; bad limits and unknown queues
 * are refused naming the problem, with nothing written; `list()`, `GET /api/queues`
 * and `baton queues` show it. That claims honour it is the conformance suite's and
 * test/e2e/queue-concurrency.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, NotFoundError, ValidationError } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { runCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { jsonPut } from '../helpers/http.js';
import { waitForEvent } from '../helpers/events.js';

const quick = defineTask('quick', { handler: async () => 'ok' });

describe('queue concurrency limits', () => {
  it('library: set, change, remove; bad limits and unknown queues refused with nothing written; list shows the limit', async () => {
    const writes: string[] = [];
    const baton = await openBaton({}, (op) => void (op === 'queueSetConcurrency' && writes.push(op)));
    await baton.enqueue(quick, {}, { queue: 'known' });
    for (const bad of [0, -1, 1.5, 1_000_001, Number.NaN, '3', undefined] as unknown[]) {
      const error = await baton.queues.setConcurrency('known', bad as number).catch((e: unknown) => e);
      expect(error, String(bad)).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(/invalid queue concurrency \(an integer 1\.\.1000000, or null for no limit\)/);
    }
    expect(await baton.queues.setConcurrency('typo', 3).catch((e: unknown) => e)).toBeInstanceOf(NotFoundError);
    await expect(baton.queues.setConcurrency('', 3, { force: true })).rejects.toBeInstanceOf(ValidationError);
    expect(writes).toEqual([]);
    expect((await baton.queues.list()).map((q) => q.concurrency)).toEqual([null]);

    expect(await baton.queues.setConcurrency('known', 5)).toEqual({ queue: 'known', concurrency: 5, changed: true });
    expect(await baton.queues.setConcurrency('known', 5)).toEqual({ queue: 'known', concurrency: 5, changed: false });
    expect(await baton.queues.setConcurrency('later', 1, { force: true })).toEqual({ queue: 'later', concurrency: 1, changed: true });
    expect((await baton.queues.list()).map((q) => [q.name, q.concurrency, q.paused])).toEqual([['known', 5, false], ['later', 1, false]]);
    expect(await baton.queues.setConcurrency('known', null)).toEqual({ queue: 'known', concurrency: null, changed: true });
    expect(await baton.queues.setConcurrency('known', null)).toEqual({ queue: 'known', concurrency: null, changed: false });
  });

  it("raising a full queue's limit wakes this process's worker at once (its poll is an hour away)", async () => {
    const baton = await openBaton();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = defineTask('held', { handler: () => gate });
    await baton.queues.setConcurrency('q', 1, { force: true });
    const worker = baton.worker({ tasks: [held, quick], queues: ['q'], concurrency: 4, pollInterval: 3_600_000 });
    await worker.start();
    const claimed = waitForEvent(worker, 'job:claimed');
    await baton.enqueue(held, null, { queue: 'q' });
    await claimed;
    const second = await baton.enqueue(quick, {}, { queue: 'q' });
    await worker.loops.fetch(); // full: claims nothing
    expect((await baton.getJob(second.id)).state).toBe('queued');
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.id === second.id);
    await baton.queues.setConcurrency('q', 2);
    await done;
    release();
  });

  it('HTTP: PUT /api/queues/:name/concurrency (admin token) sets and removes it; GET /api/queues shows it; bad input → 4xx, nothing changed', async () => {
    const baton = await openBaton();
    await baton.enqueue(quick, {}, { queue: 'mail' });
    const app = createHttpApp(baton, { readToken: 'r', adminToken: 'a' });
    const put = jsonPut(app);
    expect((await put('/api/queues/mail/concurrency', { concurrency: 2 }, 'r')).status).toBe(403);
    expect(await put('/api/queues/mail/concurrency', { concurrency: 0 })).toMatchObject({ status: 400, json: { error: { code: 'validation', message: expect.stringContaining('invalid queue concurrency') } } });
    expect((await put('/api/queues/mail/concurrency', { concurrency: 2, extra: 1 })).status).toBe(400);
    expect((await put('/api/queues/mial/concurrency', { concurrency: 2 })).status).toBe(404);
    expect((await baton.queues.list())[0]!.concurrency).toBeNull();
    expect(await put('/api/queues/mail/concurrency', { concurrency: 2 })).toEqual({ status: 200, json: { queue: 'mail', concurrency: 2, changed: true } });
    const listed = await app.request('/api/queues', { headers: { authorization: 'Bearer r' } });
    expect(((await listed.json()) as { queues: Array<{ queue: string; concurrency: number | null }> }).queues.map((q) => [q.queue, q.concurrency])).toEqual([['mail', 2]]);
    expect(await put('/api/queues/mail/concurrency', { concurrency: null })).toEqual({ status: 200, json: { queue: 'mail', concurrency: null, changed: true } });
  });

  it('CLI: baton queue limit NAME N|none; baton queues shows running/limit; a bad value exits 2 with one line and changes nothing', async () => {
    const db = tempDatabase();
    const d = ['--database', db.url];
    const baton = await openBaton({ database: db.url });
    await baton.enqueue(quick, {}, { queue: 'mail' });
    const [zero, word, typo] = await Promise.all([runCli(['queue', 'limit', 'mail', '0', ...d]), runCli(['queue', 'limit', 'mail', 'lots', ...d]), runCli(['queue', 'limit', 'mial', '2', ...d])]);
    expect(zero.code).toBe(2);
    expect(zero.stderr.trim().split('\n')).toHaveLength(1);
    expect(zero.stderr).toMatch(/expected an integer 1\.\.1,000,000, or "none"/);
    expect(word.code).toBe(2);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/no queue named "mial"/);
    expect((await baton.queues.list())[0]!.concurrency).toBeNull();

    const set = await runCli(['queue', 'limit', 'mail', '3', ...d]);
    expect(set).toMatchObject({ code: 0 });
    expect(set.stdout).toContain('queue mail: at most 3 running at once across the fleet');
    const listed = await runCli(['queues', ...d]);
    expect(listed.stdout).toMatch(/mail\s+active\s+1\s+\S+\s+0\/3/);
    const cleared = await runCli(['queue', 'limit', 'mail', 'none', '--json', ...d]);
    expect(JSON.parse(cleared.stdout)).toEqual({ queue: 'mail', concurrency: null, changed: true });
  });
});
