/**
 * Concurrency keys through a real worker (issue 12), both drivers: a task's
 * `concurrency` gives each job its key and limit at enqueue; `cancelInProgress`
 * cancels the running job of the key cooperatively — its handler's signal aborts with
 * a CancelledError naming the job that superseded it — and the newer job then runs.
 */
import { describe, expect, it } from 'vitest';
import { CancelledError, defineTask, ValidationError } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

describe('concurrency keys', () => {
  it('cancelInProgress: a newer job of the key cancels the running one cooperatively; it ends cancelled and the newer one completes', async () => {
    const baton = await openBaton();
    const heard: unknown[] = [];
    const sync = defineTask('sync', {
      concurrency: { key: (p: { doc: string; n: number }) => p.doc, strategy: 'cancelInProgress' },
      handler: async (p: { doc: string; n: number }, ctx) => {
        if (p.n === 2) return 'fresh';
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        heard.push(ctx.signal.reason);
        throw ctx.signal.reason;
      },
    });
    const worker = baton.worker({ tasks: [sync], concurrency: 4, pollInterval: 20, cancelPollInterval: 20 });
    await worker.start();
    const started = waitForEvent(worker, 'job:claimed');
    const first = await baton.enqueue(sync, { doc: 'd1', n: 1 });
    expect(first).toMatchObject({ concurrencyKey: 'd1', concurrencyLimit: 1 });
    await started;
    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === first.id);
    const completed = waitForEvent(worker, 'job:completed');
    const second = await baton.enqueue(sync, { doc: 'd1', n: 2 });
    await cancelled;
    expect((await completed).job.id).toBe(second.id);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeInstanceOf(CancelledError);
    expect((heard[0] as CancelledError).reason).toBe(`superseded by job ${second.id} (concurrency key "d1", strategy cancelInProgress)`);
    expect(await baton.getJob(first.id)).toMatchObject({ state: 'cancelled', attempt: 1 });
    expect(await baton.getJob(second.id)).toMatchObject({ state: 'completed', result: 'fresh' });
    await worker.stop();
  });

  it('the enqueue option concurrencyKey wins over the task\'s; a key function that throws or returns a non-string is refused with nothing written', async () => {
    const baton = await openBaton();
    const task = defineTask('keyed', {
      concurrency: { key: (p: { k: unknown }) => p.k as string, limit: 3 },
      handler: async () => null,
    });
    const explicit = await baton.enqueue(task, { k: 'from-payload' }, { concurrencyKey: 'given' });
    expect(explicit).toMatchObject({ concurrencyKey: 'given', concurrencyLimit: 3 });
    expect(await baton.enqueue(task, { k: null })).toMatchObject({ concurrencyKey: null, concurrencyLimit: null });
    await expect(baton.enqueue(task, { k: 42 })).rejects.toThrow(ValidationError);
    await expect(baton.enqueue(task, { k: 42 })).rejects.toThrow(/invalid concurrency key from concurrency.key.*must return a string/);
    const throwing = defineTask('throwing', { concurrency: { key: () => { throw new Error('no customer'); } }, handler: async () => null });
    await expect(baton.enqueue(throwing, {})).rejects.toThrow('task "throwing": concurrency.key threw: no customer');
    await expect(baton.enqueue('keyed', { k: 'x' }, { concurrencyKey: '' })).rejects.toThrow(/concurrencyKey/);
    expect(await baton.listJobs({ limit: 10 })).toHaveLength(2); // the two accepted; nothing of the refused ones
    expect(await baton.queues.keys()).toEqual([{ queue: 'default', key: 'given', queued: 1, running: 0, limit: 3 }]);
    expect(() => defineTask('bad', { concurrency: { limit: 0 }, handler: async () => null })).toThrow(/concurrency/);
    expect(() => defineTask('bad', { concurrency: { strategy: 'nope' as 'queue' }, handler: async () => null })).toThrow(/strategy/);
  });
});
