/** ctx.forEach (src/worker/for-each.ts): bounded concurrency, graceful abort, resume record. */
import { describe, expect, it } from 'vitest';
import { CancelledError, ConfigError, defineTask, ShutdownError, sleep, type Json } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { until, waitForEvent } from '../helpers/events.js';

/** A promise plus its resolve function. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The ranges forEach recorded under `key` in a stored checkpoint. */
const doneRanges = (checkpoint: Json, key = 'forEach') => ((checkpoint as Record<string, { done: number[][] }> | null)?.[key]?.done ?? null);

describe('ctx.forEach', () => {
  it('runs every item with at most `concurrency` in flight and records all of them done', async () => {
    const baton = await openBaton();
    let inFlight = 0;
    let maxInFlight = 0;
    const ran: number[] = [];
    const loop = defineTask('loop', {
      handler: async (_: null, ctx) =>
        ctx.forEach(
          Array.from({ length: 20 }, (_, i) => i * 10),
          async (item, { index }) => {
            inFlight++;
            maxInFlight = Math.max(maxInFlight, inFlight);
            await sleep(5 + (index % 3) * 5);
            ran.push(item);
            inFlight--;
          },
          { concurrency: 3 },
        ),
    });
    const worker = baton.worker({ tasks: [loop] });
    await worker.start();
    const completed = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(loop, null);
    const done = await completed;

    expect(maxInFlight).toBe(3);
    expect(ran.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i * 10));
    expect(done.result).toEqual({ done: 20, skipped: 0 });
    expect(doneRanges((await baton.getJob(job.id)).checkpoint)).toEqual([[0, 19]]);
  });

  it('on cancel it starts no new item, lets running items finish, saves the record (keeping other checkpoint keys) and throws the CancelledError', async () => {
    const baton = await openBaton();
    const started: number[] = [];
    const finished: number[] = [];
    let thrown: unknown;
    const bothRunning = deferred();
    const loop = defineTask('loop', {
      handler: async (_: null, ctx) => {
        await ctx.saveCheckpoint({ phase: 'items' });
        try {
          return await ctx.forEach(
            Array.from({ length: 10 }, (_, i) => i),
            async (item, { signal }) => {
              started.push(item);
              if (started.length === 2) bothRunning.resolve();
              // Runs until the job is cancelled, then finishes its work anyway.
              await new Promise((resolve) => (signal.aborted ? resolve(null) : signal.addEventListener('abort', resolve, { once: true })));
              await sleep(20);
              finished.push(item);
            },
            { concurrency: 2 },
          );
        } catch (error) {
          thrown = error;
          throw error;
        }
      },
    });
    const worker = baton.worker({ tasks: [loop], cancelPollInterval: 20 });
    await worker.start();
    const cancelled = waitForEvent(worker, 'job:cancelled');
    const job = await baton.enqueue(loop, null);
    await bothRunning.promise;
    expect((await baton.cancel(job.id, 'enough')).outcome).toBe('requested');
    await cancelled;

    expect(started.sort()).toEqual([0, 1]);
    expect(finished.sort()).toEqual([0, 1]);
    expect(thrown).toBeInstanceOf(CancelledError);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('cancelled');
    expect(final.checkpoint).toEqual({ phase: 'items', forEach: { done: [[0, 1]] } });
  });

  it('resumes after a shutdown release: a second worker skips the items done, and every item ran exactly once overall', async () => {
    const db = await openBaton();
    const runs = new Map<number, number>();
    const reached = deferred();
    const results: Array<{ worker: string; outcome: unknown }> = [];
    const items = Array.from({ length: 10 }, (_, i) => `item-${i}`);
    let firstAttempt = true;
    const loop = defineTask('loop', {
      handler: async (_: null, ctx) => {
        const gated = firstAttempt;
        firstAttempt = false;
        try {
          const result = await ctx.forEach(
            items,
            async (_item, { index, signal }) => {
              // First run: items 0-3 are quick; 4 and 5 run until the shutdown aborts
              // them, then finish their work (the side effect) anyway.
              if (gated && index >= 4) {
                if (index === 5) reached.resolve();
                await new Promise((resolve) => (signal.aborted ? resolve(null) : signal.addEventListener('abort', resolve, { once: true })));
                await sleep(10);
              }
              runs.set(index, (runs.get(index) ?? 0) + 1);
            },
            { concurrency: 2 },
          );
          results.push({ worker: gated ? 'first' : 'second', outcome: result });
          return result;
        } catch (error) {
          results.push({ worker: gated ? 'first' : 'second', outcome: error });
          throw error;
        }
      },
    });
    // The aborted items settle at once; the grace only has to outlast a busy machine's stall.
    const first = db.worker({ tasks: [loop], drainTimeout: 50, abortGrace: 60_000 });
    await first.start();
    const released = waitForEvent(first, 'job:released');
    const job = await db.enqueue(loop, null);
    await reached.promise;
    const summary = await first.stop();
    await released;
    expect(summary).toMatchObject({ released: 1, abandoned: 0 });
    const between = await db.getJob(job.id);
    expect(between.state).toBe('queued');
    expect(between.attempt).toBe(0);
    expect(doneRanges(between.checkpoint)).toEqual([[0, 5]]);
    expect(results[0]!.outcome).toBeInstanceOf(ShutdownError);

    const second = db.worker({ tasks: [loop] });
    const reported: Array<{ current: number; total?: number }> = [];
    second.on('job:progress', (e) => reported.push(e.progress));
    const completed = waitForEvent(second, 'job:completed');
    await second.start();
    const done = await completed;

    expect(done.result).toEqual({ done: 4, skipped: 6 });
    expect([...runs.entries()].sort(([a], [b]) => a - b)).toEqual(items.map((_, i) => [i, 1]));
    const final = await db.getJob(job.id);
    expect(final.state).toBe('completed');
    expect(final.attempt).toBe(1);
    expect(doneRanges(final.checkpoint)).toEqual([[0, 9]]);
    // Progress counts the items skipped from the checkpoint as done: the resumed run
    // starts at 6 of 10, never goes below, and ends at 10 of 10.
    expect(final.progress).toMatchObject({ current: 10, total: 10 });
    await until(() => reported.some((p) => p.current === 10), 'the last progress event');
    expect(reported.every((p) => p.current >= 6 && p.total === 10)).toBe(true);
  });

  it('reports progress as (items done, items) with the message given, or nothing with `progress: false`', async () => {
    const baton = await openBaton();
    const loop = defineTask('loop', {
      handler: async (quiet: boolean, ctx) =>
        ctx.forEach([1, 2, 3], () => sleep(1), quiet ? { progress: false } : { progress: 'pages', concurrency: 1 }),
    });
    const worker = baton.worker({ tasks: [loop] });
    await worker.start();
    let completed = waitForEvent(worker, 'job:completed');
    const loud = await baton.enqueue(loop, false);
    await completed;
    completed = waitForEvent(worker, 'job:completed');
    const quiet = await baton.enqueue(loop, true);
    await completed;
    expect((await baton.getJob(loud.id)).progress).toEqual({ current: 3, total: 3, message: 'pages' });
    expect((await baton.getJob(quiet.id)).progress).toBeNull();
  });

  it('an item that throws stops the loop, and forEach rethrows after the running items settled', async () => {
    const baton = await openBaton();
    const order: string[] = [];
    const gate = deferred();
    const loop = defineTask('loop', {
      maxAttempts: 1,
      handler: async (_: null, ctx) => {
        try {
          return await ctx.forEach(
            Array.from({ length: 10 }, (_, i) => i),
            async (item) => {
              order.push(`start ${item}`);
              if (item === 2) {
                setImmediate(gate.resolve);
                throw new Error('item 2 is bad');
              }
              await gate.promise;
              await sleep(10);
              order.push(`end ${item}`);
            },
            { concurrency: 3 },
          );
        } catch (error) {
          order.push(`rejected: ${(error as Error).message}`);
          throw error;
        }
      },
    });
    const worker = baton.worker({ tasks: [loop] });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(loop, null);
    const event = await failed;

    expect(event.message).toBe('item 2 is bad');
    expect(order.slice(0, 3)).toEqual(['start 0', 'start 1', 'start 2']);
    expect(order.slice(3, 5).sort()).toEqual(['end 0', 'end 1']);
    expect(order.slice(5)).toEqual(['rejected: item 2 is bad']);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('failed');
    expect(doneRanges(final.checkpoint)).toEqual([[0, 1]]);
  });

  it('a non-object checkpoint is a ConfigError', async () => {
    const baton = await openBaton();
    const errors: unknown[] = [];
    let calls = 0;
    const loop = defineTask('loop', {
      handler: async (value: Json, ctx) => {
        await ctx.saveCheckpoint(value);
        try {
          await ctx.forEach([1, 2], () => void calls++);
        } catch (error) {
          errors.push(error);
        }
        return null;
      },
    });
    const worker = baton.worker({ tasks: [loop] });
    await worker.start();
    for (const value of [5, 'text', [1, 2], true]) {
      const completed = waitForEvent(worker, 'job:completed');
      await baton.enqueue(loop, value);
      await completed;
    }
    expect(errors).toHaveLength(4);
    expect(errors.every((e) => e instanceof ConfigError)).toBe(true);
    expect((errors[0] as ConfigError).message).toMatch(/non-object checkpoint/);
    expect(calls).toBe(0);
  });

  it('saves the record every `checkpointEvery` items while the loop runs', async () => {
    const baton = await openBaton();
    const records: Json[] = [];
    const loop = defineTask('loop', {
      handler: async (_: null, ctx) => ctx.forEach(Array.from({ length: 7 }, (_, i) => i), () => sleep(1), { concurrency: 1, checkpointEvery: 3, key: 'pages' }),
    });
    const worker = baton.worker({ tasks: [loop] });
    worker.on('job:checkpoint', (e) => records.push(e.checkpoint as Json));
    await worker.start();
    const completed = waitForEvent(worker, 'job:completed');
    await baton.enqueue(loop, null);
    await completed;
    await until(() => records.length >= 3, 'three checkpoint events');
    expect(records.map((r) => doneRanges(r, 'pages'))).toEqual([[[0, 2]], [[0, 5]], [[0, 6]]]);
  });
});
