import { describe, expect, it } from 'vitest';
import { ChildFailedError, defineTask } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

const square = defineTask('square', {
  maxAttempts: 1,
  handler: async (n: number) => {
    if (n < 0) throw new Error(`negative: ${n}`);
    return n * n;
  },
});

describe('child jobs', () => {
  it('fans out 20 children over three workers and fans in their results; the parent frees its slot while it waits', async () => {
    const baton = await openBaton();
    const parent = defineTask('parent', {
      handler: async (count: number, ctx) => {
        const children = [];
        for (let i = 1; i <= count; i++) children.push(await ctx.enqueueChild(square, i));
        const outcomes = await ctx.waitForChildren();
        return outcomes.map((o) => o.result);
      },
    });
    // One slot each: a parent that held its slot while waiting would starve its own children.
    const workers = [1, 2, 3].map(() => baton.worker({ tasks: [parent, square], concurrency: 1 }));
    const waiting = Promise.race(workers.map((w) => waitForEvent(w, 'job:waiting')));
    const done = Promise.race(workers.map((w) => waitForEvent(w, 'job:completed', (e) => e.job.task === 'parent')));
    for (const w of workers) await w.start();
    const job = await baton.enqueue(parent, 20);
    const { wait } = await waiting;
    expect(wait.kind).toBe('children');
    expect((await done).result).toEqual(Array.from({ length: 20 }, (_, i) => (i + 1) ** 2));
    const kids = await baton.store.jobChildren({ id: job.id });
    expect(kids).toHaveLength(20);
    expect((await baton.getJob(kids[0]!.id)).parentId).toBe(job.id);
    expect((await baton.getJob(job.id)).attempt).toBe(1);
  });

  it('fails the parent, without retry, when a child fails under the default policy', async () => {
    const baton = await openBaton();
    const parent = defineTask('parent', {
      maxAttempts: 3,
      handler: async (_: null, ctx) => {
        await ctx.enqueueChild(square, 2);
        await ctx.enqueueChild(square, -1);
        return ctx.waitForChildren();
      },
    });
    const worker = baton.worker({ tasks: [parent, square], concurrency: 2 });
    const failed = waitForEvent(worker, 'job:failed', (e) => e.job.task === 'parent');
    await worker.start();
    const job = await baton.enqueue(parent, null);
    const event = await failed;
    expect(event.error).toBeInstanceOf(ChildFailedError);
    expect(event.retryAt).toBeNull();
    expect(event.message).toMatch(/child job \d+ \(square\) failed: negative: -1/);
    expect((await baton.getJob(job.id)).state).toBe('failed');
  });

  it('hands the failure to a parent that chose onFailure "continue"', async () => {
    const baton = await openBaton();
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        await ctx.enqueueChild(square, 3);
        await ctx.enqueueChild(square, -2, { onFailure: 'continue' });
        const outcomes = await ctx.waitForChildren();
        return outcomes.map((o) => [o.state, o.result, o.error]);
      },
    });
    const worker = baton.worker({ tasks: [parent, square], concurrency: 1 });
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'parent');
    await worker.start();
    await baton.enqueue(parent, null);
    expect((await done).result).toEqual([['completed', 9, null], ['failed', null, 'negative: -2']]);
  });

  it('cancels the unfinished children with their parent, running ones included', async () => {
    const baton = await openBaton();
    const hold = defineTask('hold', { handler: (_: null, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error))) });
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        for (let i = 0; i < 3; i++) await ctx.enqueueChild(hold, null);
        await ctx.waitForChildren();
      },
    });
    const worker = baton.worker({ tasks: [parent, hold], concurrency: 2 });
    // Two slots: the parent frees its slot as it waits, so two children run and one is queued.
    const running = collectEvents(worker, 'job:started', 2, (e) => e.job.task === 'hold');
    const cancelledRunning = collectEvents(worker, 'job:cancelled', 2, (e) => e.job.task === 'hold');
    await worker.start();
    const job = await baton.enqueue(parent, null);
    await running;
    const answer = await baton.cancel(job.id, 'order withdrawn');
    expect(answer.outcome).toBe('cancelled');
    await cancelledRunning; // their signals fired; each handler rejected with it
    const kids = await baton.store.jobChildren({ id: job.id });
    expect(kids.map((k) => k.state)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(kids.map((k) => k.error)).toEqual(Array(3).fill(`parent job ${job.id} cancelled`));
    const timeline = (await baton.getJobTimeline(kids[2]!.id)).timeline;
    expect(timeline.find((e) => e.type === 'cancelRequested')?.summary).toMatch(new RegExp(`by job ${job.id}`));
  });

  it('never enqueues a child twice: a retried parent replays its children', async () => {
    const baton = await openBaton();
    const parent = defineTask('parent', {
      maxAttempts: 2,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        const a = await ctx.enqueueChild(square, 4);
        const b = await ctx.enqueueChild(square, 5);
        if (ctx.job.attempt === 1) throw new Error('crash after the fan-out');
        return [await a.result(), await b.result()];
      },
    });
    const worker = baton.worker({ tasks: [parent, square], concurrency: 1 });
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'parent');
    await worker.start();
    const job = await baton.enqueue(parent, null);
    expect((await done).result).toEqual([16, 25]);
    expect(await baton.store.jobChildren({ id: job.id })).toHaveLength(2);
  });

  it('refuses a key or client on a child, and result() after the parent ended', async () => {
    const baton = await openBaton();
    let handle: { result(): Promise<unknown> } | undefined;
    const seen: unknown[] = [];
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        seen.push(await ctx.enqueueChild(square, 1, { key: 'k' } as never).catch((e: unknown) => e));
        seen.push(await ctx.enqueueChild(square, 1, { onFailure: 'maybe' } as never).catch((e: unknown) => e));
        seen.push(await ctx.enqueueChild(square, (() => 1) as never).catch((e: unknown) => e));
        handle = await ctx.enqueueChild(square, 1);
        return 'ok';
      },
    });
    const worker = baton.worker({ tasks: [parent, square], concurrency: 1 });
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'parent');
    await worker.start();
    await baton.enqueue(parent, null);
    await done;
    expect(seen.map((e) => (e as Error).name)).toEqual(['ValidationError', 'ValidationError', 'ValidationError']);
    await expect(handle!.result()).rejects.toThrow(/outside a job use baton.waitForResult/);
  });
});
