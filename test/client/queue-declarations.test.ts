/**
 * Queues declared in code (issue 30): `defineQueue`, `createBaton({ queues })`, a task's
 * `queue`, and how they combine with overrides set by the library, the CLI and the HTTP
 * API, on both drivers: the value in force and its source in `list()`, `baton queues` and
 * `GET /api/queues`; `clearOverride` / `--clear` / DELETE. The store's side is the
 * conformance suite's (queue-declarations.ts).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, defineQueue, defineTask, NotFoundError, type Baton } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { runCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { collectEvents } from '../helpers/events.js';

const info = async (baton: Baton, name: string) => (await baton.queues.list()).find((q) => q.name === name)!;

describe('queues declared in code', () => {
  it('createBaton stores the declarations; an override wins and survives a redeploy with other values; clearing it puts the new declared value in force', async () => {
    const db = tempDatabase();
    const v1 = defineQueue('emails', { concurrency: 3, rateLimit: { limit: 100, periodMs: 60_000 } });
    const first = await openBaton({ database: db.url, queues: [v1] });
    expect(await info(first, 'emails')).toMatchObject({
      concurrency: 3, rateLimit: { limit: 100, periodMs: 60_000, used: 0 }, keyRateLimit: null,
      sources: { concurrency: 'code', rateLimit: 'code', keyRateLimit: null },
      declared: { concurrency: 3, rateLimit: { limit: 100, periodMs: 60_000 }, keyRateLimit: null },
    });
    // Known without a job: no { force: true } needed.
    expect(await first.queues.setConcurrency('emails', 1)).toMatchObject({ concurrency: 1, changed: true });
    expect((await info(first, 'emails')).sources.concurrency).toBe('override');

    // A redeploy declares other values: the override is kept, the rate follows the code.
    const v2 = defineQueue('emails', { concurrency: 5, rateLimit: { limit: 50, periodMs: 60_000 } });
    const second = await openBaton({ database: db.url, queues: [v2] });
    expect(await info(second, 'emails')).toMatchObject({
      concurrency: 1, rateLimit: { limit: 50, periodMs: 60_000 }, sources: { concurrency: 'override', rateLimit: 'code' }, declared: { concurrency: 5 },
    });
    expect(await second.queues.clearOverride('emails', 'concurrency')).toEqual({ queue: 'emails', setting: 'concurrency', changed: true });
    expect(await second.queues.clearOverride('emails', 'concurrency')).toEqual({ queue: 'emails', setting: 'concurrency', changed: false });
    expect(await info(second, 'emails')).toMatchObject({ concurrency: 5, sources: { concurrency: 'code' } });
    await expect(second.queues.clearOverride('emails', 'limit' as never)).rejects.toThrow(/invalid setting \(one of concurrency, rateLimit, keyRateLimit\)/);
    await expect(second.queues.clearOverride('nowhere', 'concurrency')).rejects.toBeInstanceOf(NotFoundError);
    // A queue not declared in code shows its hand-set limit as an override.
    await second.queues.setConcurrency('plain', 2, { force: true });
    expect(await info(second, 'plain')).toMatchObject({ concurrency: 2, sources: { concurrency: 'override', rateLimit: null }, declared: null });
  });

  it("a worker stores the queue its tasks declare when it starts, serves it, and enqueues without a queue go there; the queue's retention reaches the pruner", async () => {
    const baton = await openBaton();
    const reports = defineQueue('reports', { concurrency: 2, retention: { completed: 0 } });
    const report = defineTask('report', { queue: reports, handler: () => 'done' });
    expect(report.queue).toBe('reports');
    const job = await baton.enqueue(report, null);
    expect(job.queue).toBe('reports');
    const worker = baton.worker({ tasks: [report], pollInterval: 60_000 });
    expect(worker.options.queues).toEqual(['default', 'reports']);
    const done = collectEvents(worker, 'job:completed', 1);
    await worker.start();
    await done;
    expect(await info(baton, 'reports')).toMatchObject({ concurrency: 2, sources: { concurrency: 'code' } });
    await worker.loops.prune(baton.clock.now() + 1);
    await expect(baton.getJob(job.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('bad definitions are refused by name: options, a name, two different definitions of one queue', async () => {
    expect(() => defineQueue('', {})).toThrow(ConfigError);
    expect(() => defineQueue('q', { concurrency: 0 })).toThrow(/queue "q" option concurrency/);
    expect(() => defineQueue('q', { rateLimit: { limit: 5 } as never })).toThrow(/queue "q" option rateLimit/);
    expect(() => defineQueue('q', { burst: 2 } as never)).toThrow(/queue "q" option/);
    expect(() => defineTask('t', { queue: '', handler: () => 1 })).toThrow(/task "t" option queue/);
    const a = defineQueue('q', { concurrency: 1 });
    const b = defineQueue('q', { concurrency: 2 });
    const t = defineTask('t', { queue: b, handler: () => 1 });
    await expect(openBaton({ queues: [a], tasks: [t] })).rejects.toThrow(/queue "q" is defined twice with different settings/);
    // The same settings twice are one queue.
    await openBaton({ queues: [a, defineQueue('q', { concurrency: 1 })] });
  });

  it('CLI and HTTP: rate and limit on a declared queue need no --force, --clear and DELETE drop the override, baton queues and GET /api/queues say where each value comes from', { timeout: 120_000 }, async () => {
    const db = tempDatabase();
    const d = ['--database', db.url];
    const baton = await openBaton({ database: db.url, queues: [defineQueue('emails', { concurrency: 3, rateLimit: { limit: 10, periodMs: 1000 } })] });
    const [rate, limit] = await Promise.all([runCli(['queue', 'rate', 'emails', '5', '60000', ...d]), runCli(['queue', 'limit', 'emails', '2', ...d])]);
    expect(rate.code, rate.stderr).toBe(0);
    expect(limit.code, limit.stderr).toBe(0);
    const listed = await runCli(['queues', ...d]);
    expect(listed.stdout).toMatch(/emails .*0\/2 \(override; code 3\).*0\/5 per 60000ms \(override; code 10 per 1000ms\)/);
    const [cleared, both] = await Promise.all([runCli(['queue', 'limit', 'emails', '--clear', '--json', ...d]), runCli(['queue', 'limit', 'emails', '4', '--clear', ...d])]);
    expect(JSON.parse(cleared.stdout)).toEqual({ queue: 'emails', setting: 'concurrency', changed: true });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--clear takes no value/);
    expect((await runCli(['queues', ...d])).stdout).toMatch(/emails .*0\/3 \(code\)/);

    const app = createHttpApp(baton, {});
    const deleted = await app.request('/api/queues/emails/rate-limit', { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ queue: 'emails', setting: 'rateLimit', changed: true });
    const queues = (await (await app.request('/api/queues')).json()) as { queues: Array<Record<string, unknown>> };
    expect(queues.queues.find((q) => q.queue === 'emails')).toMatchObject({
      concurrency: 3, rateLimit: { limit: 10, periodMs: 1000 }, sources: { concurrency: 'code', rateLimit: 'code', keyRateLimit: null },
    });
    expect((await app.request('/api/queues/emails/rate-limit?perKey=maybe', { method: 'DELETE' })).status).toBe(400);
  });
});
