/** The handler context: throttled progress, checkpoints across attempts, fencing, logger. */
import { describe, expect, it } from 'vitest';
import { defineTask, LeaseLostError, type Json } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

/** A promise plus its resolve function. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('ctx.progress', () => {
  it('throttles writes (many calls within progressInterval → few jobProgress calls) and stores the last value', async () => {
    const calls: string[] = [];
    const baton = await openBaton({}, (op) => calls.push(op));
    const interval = 200;
    let loopMs = 0;
    const busy = defineTask('busy', {
      handler: async (_: null, ctx) => {
        const started = performance.now();
        for (let i = 1; i <= 1000; i++) {
          ctx.progress(i, 1000);
          if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
        }
        ctx.progress(1000, 1000, 'done');
        loopMs = performance.now() - started;
        return 'ok';
      },
    });
    const worker = baton.worker({ tasks: [busy], progressInterval: interval });
    await worker.start();
    const completed = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(busy, null);
    await completed;

    const writes = calls.filter((op) => op === 'jobProgress').length;
    // One write at the start, at most one per interval while the loop ran, and the final flush.
    expect(writes).toBeGreaterThanOrEqual(1);
    expect(writes).toBeLessThanOrEqual(2 + Math.ceil(loopMs / interval));
    const final = await baton.getJob(job.id);
    expect(final.progress).toEqual({ current: 1000, total: 1000, message: 'done' });
  });

  it('writes the last value of a burst once the interval has passed, while the handler is still running', async () => {
    const baton = await openBaton();
    const finish = deferred();
    const slow = defineTask('slow', {
      handler: async (_: null, ctx) => {
        ctx.progress(1, 3);
        ctx.progress(2, 3, 'two');
        await finish.promise;
        return null;
      },
    });
    const worker = baton.worker({ tasks: [slow], progressInterval: 100 });
    await worker.start();
    const trailing = waitForEvent(worker, 'job:progress', (e) => e.progress.current === 2);
    const completed = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(slow, null);
    const event = await trailing;
    expect(event.progress).toEqual({ current: 2, total: 3, message: 'two' });
    const running = await baton.getJob(job.id);
    expect(running.state).toBe('running');
    expect(running.progress).toEqual({ current: 2, total: 3, message: 'two' });
    finish.resolve();
    await completed;
  });
});

describe('ctx.checkpoint', () => {
  it('returns the last saved value within an attempt and the stored one on the next attempt after a throw', async () => {
    const baton = await openBaton();
    const seen: Array<{ attempt: number; at: string; checkpoint: Json }> = [];
    const resumable = defineTask('resumable', {
      maxAttempts: 2,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        seen.push({ attempt: ctx.job.attempt, at: 'start', checkpoint: ctx.checkpoint });
        if (ctx.job.attempt === 1) {
          await ctx.saveCheckpoint({ step: 1 });
          seen.push({ attempt: 1, at: 'after save 1', checkpoint: ctx.checkpoint });
          await ctx.saveCheckpoint({ step: 2, items: ['a', 'b'] });
          seen.push({ attempt: 1, at: 'after save 2', checkpoint: ctx.checkpoint });
          throw new Error('crash after step 2');
        }
        return ctx.checkpoint;
      },
    });
    const worker = baton.worker({ tasks: [resumable], pollInterval: 20 });
    await worker.start();
    const completed = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(resumable, null);
    const done = await completed;

    expect(seen).toEqual([
      { attempt: 1, at: 'start', checkpoint: null },
      { attempt: 1, at: 'after save 1', checkpoint: { step: 1 } },
      { attempt: 1, at: 'after save 2', checkpoint: { step: 2, items: ['a', 'b'] } },
      { attempt: 2, at: 'start', checkpoint: { step: 2, items: ['a', 'b'] } },
    ]);
    expect(done.result).toEqual({ step: 2, items: ['a', 'b'] });
    const final = await baton.getJob(job.id);
    expect(final.attempt).toBe(2);
    expect(final.checkpoint).toEqual({ step: 2, items: ['a', 'b'] });
  });

  it('saveCheckpoint after the lease was lost rejects with LeaseLostError, and that run cannot overwrite the newer one', async () => {
    const calls: string[] = [];
    const baton = await openBaton({}, (op) => calls.push(op));
    const proceed = deferred();
    const outcome: { error?: unknown; reason?: unknown } = {};
    const taken = defineTask('taken', {
      maxAttempts: 3,
      handler: async (_: null, ctx) => {
        if (ctx.job.attempt > 1) return `attempt ${ctx.job.attempt}`;
        await ctx.saveCheckpoint({ saved: 'before the takeover' });
        await proceed.promise;
        try {
          await ctx.saveCheckpoint({ saved: 'after the takeover' });
        } catch (error) {
          outcome.error = error;
        }
        outcome.reason = ctx.signal.reason;
        return 'attempt 1';
      },
    });
    // Long lease, slow heartbeat: only the test makes the lease go away. One slot, held by
    // attempt 1: the rescued job keeps its runAt (due at once), and only \`other\` may claim it.
    const worker = baton.worker({ tasks: [taken], concurrency: 1, leaseTtl: 60_000, heartbeatInterval: 30_000, pollInterval: 20 });
    await worker.start();
    const checkpointed = waitForEvent(worker, 'job:checkpoint');
    const job = await baton.enqueue(taken, null);
    await checkpointed;

    // Another worker whose clock is 2 minutes ahead sees the lease expired (as after
    // a freeze of the first one): its rescuer requeues the job and it claims it as
    // attempt 2, with a new fencing token. Its loops are driven by hand (not started).
    const other = baton.worker({ tasks: [taken], clock: { now: () => Date.now() + 120_000 } });
    const second = waitForEvent(other, 'job:completed', (e) => e.job.attempt === 2);
    // The rescue itself wakes \`other\`'s claim, which may take the job at once (on another pool connection): read the report, not the row.
    expect((await other.loops.rescue()).requeued).toEqual([job.id]);
    await other.loops.fetch();
    expect((await second).result).toBe('attempt 2');

    const dropped = waitForEvent(worker, 'lease:lost', (e) => e.job.attempt === 1);
    const checkpointWrites = calls.filter((op) => op === 'jobCheckpoint').length;
    proceed.resolve();
    await dropped;
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcome.error).toBeInstanceOf(LeaseLostError);
    expect(outcome.reason).toBeInstanceOf(LeaseLostError);
    // The refused write was attempted once (and refused by the token); nothing else was written.
    expect(calls.filter((op) => op === 'jobCheckpoint').length).toBe(checkpointWrites + 1);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('completed');
    expect(final.result).toBe('attempt 2');
    expect(final.checkpoint).toEqual({ saved: 'before the takeover' });
  });
});

describe('ctx.logger', () => {
  it('exists and is bound to the job', async () => {
    const baton = await openBaton();
    let bindings: Record<string, unknown> = {};
    const logs = defineTask('logs', {
      handler: async (_: null, ctx) => {
        expect(typeof ctx.logger.info).toBe('function');
        ctx.logger.info({ step: 1 }, 'hello from the handler');
        bindings = ctx.logger.bindings();
        return null;
      },
    });
    const worker = baton.worker({ tasks: [logs] });
    await worker.start();
    const completed = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(logs, null);
    await completed;
    expect(bindings).toMatchObject({ component: 'job', jobId: job.id, attempt: 1, task: 'logs', workerId: worker.id });
  });
});
