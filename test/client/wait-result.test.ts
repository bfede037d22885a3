import { describe, expect, it } from 'vitest';
import { defineTask, JobCancelledError, JobFailedError, NotFoundError, ValidationError, WaitClosedError, WaitTimeoutError } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { rawQuery } from '../helpers/raw.js';
import { until, waitForEvent } from '../helpers/events.js';
import { inOtherProcess, spawnClient } from '../helpers/client.js';

/** A task held until `release()`; `fail` makes it throw, for good. */
function gated() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const task = defineTask('gated', {
    maxAttempts: 1,
    handler: async (p: { fail?: boolean; value?: number }) => {
      await gate;
      if (p.fail) throw new Error('disk full');
      return { value: p.value ?? 0 };
    },
  });
  return { task, release };
}

describe('baton.waitForResult', () => {
  it('resolves with the result of a job that completes while it waits, and at once for one already completed', async () => {
    const baton = await openBaton();
    const { task, release } = gated();
    const worker = baton.worker({ tasks: [task], concurrency: 2 });
    await worker.start();
    const started = waitForEvent(worker, 'job:started');
    const job = await baton.enqueue(task, { value: 7 });
    await started;
    const waiting = baton.waitForResult(job.id);
    release();
    expect(await waiting).toEqual({ value: 7 });
    expect(await baton.waitForResult(job.id)).toEqual({ value: 7 });
  });

  it('rejects with JobFailedError (the job\'s error) and JobCancelledError (the reason)', async () => {
    const baton = await openBaton();
    const { task, release } = gated();
    const worker = baton.worker({ tasks: [task], concurrency: 2 });
    await worker.start();
    const failing = await baton.enqueue(task, { fail: true });
    const failed = baton.waitForResult(failing.id);
    release();
    const error = await failed.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    expect((error as JobFailedError).error).toBe('disk full');
    expect((error as JobFailedError).job?.state).toBe('failed');

    const later = await baton.enqueue(task, {}, { delay: 60_000 });
    const cancelled = baton.waitForResult(later.id);
    await baton.cancel(later.id, 'not needed');
    const reason = await cancelled.catch((e: unknown) => e);
    expect(reason).toBeInstanceOf(JobCancelledError);
    expect((reason as JobCancelledError).reason).toBe('not needed');
  });

  it('times out cleanly, stops on its signal, and refuses unknown jobs and bad options', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue('nobody-serves-this', null, { delay: 60_000 });
    const timedOut = await baton.waitForResult(job.id, { timeout: 50 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(WaitTimeoutError);
    expect((timedOut as WaitTimeoutError).job?.state).toBe('queued');
    const controller = new AbortController();
    const aborted = baton.waitForResult(job.id, { signal: controller.signal });
    controller.abort(new Error('user went away'));
    await expect(aborted).rejects.toThrow('user went away');
    await expect(baton.waitForResult(987_654)).rejects.toThrow(NotFoundError);
    await expect(baton.waitForResult(job.id, { timeout: -1 })).rejects.toThrow(ValidationError);
    await expect(baton.waitForResult(job.id, { wait: 1 } as never)).rejects.toThrow(ValidationError);
    expect((await baton.getJob(job.id)).state).toBe('queued');
  });

  it('awaits in another process a job this process runs, and this process a job another enqueued', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const { task, release } = gated();
    const worker = baton.worker({ tasks: [task], concurrency: 1 });
    await worker.start();
    const started = waitForEvent(worker, 'job:started');
    const job = await baton.enqueue(task, { value: 42 });
    await started;
    const waiter = spawnClient({ database: db.url, op: 'waitForResult', id: job.id, options: { timeout: 60_000 } });
    release();
    const answer = await waiter.waitFor((m) => m.type === 'result' || m.type === 'error', 'the awaited result');
    expect(answer).toMatchObject({ type: 'result', value: { value: 42 } });

    const enqueued = await inOtherProcess({ database: db.url, op: 'enqueue', task: 'gated', payload: { value: 5 } });
    expect(await baton.waitForResult((enqueued.value as { id: number }).id)).toEqual({ value: 5 });
  });

  it('close() ends a wait in progress with a WaitClosedError naming the job; the job is untouched', async () => {
    const baton = await openBaton();
    const parked = await baton.enqueue('parked-task', null, { queue: 'nobody-serves' });
    const waiting = baton.waitForResult(parked.id);
    waiting.catch(() => undefined);
    await baton.close();
    await expect(waiting).rejects.toBeInstanceOf(WaitClosedError);
    await expect(waiting).rejects.toThrow(`the wait for job ${parked.id} ended: baton.close() was called`);
  });

  it('1,000 waits at once share one change watch and leak no listeners: later waits reuse the lingering watch, and close releases it, leaving no timer and no waiter registration', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const echo = defineTask('echo', { handler: async (n: number) => n });
    const jobs = await baton.enqueueMany(Array.from({ length: 1000 }, (_, i) => ({ task: echo, payload: i })));
    // Count the change watches the waits hold (baton.store is the store the client uses).
    let watching = 0;
    const watch = baton.store.watchChanges.bind(baton.store);
    baton.store.watchChanges = (params) => {
      watching++;
      const off = watch(params);
      return () => {
        watching--;
        off();
      };
    };
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const timersBefore = timers();
    const results = Promise.all(jobs.map((j) => baton.waitForResult(j.id)));
    await until(() => (watching === 1 ? true : undefined), 'the waits subscribed');
    expect(watching).toBe(1); // one watch (one WAL watch and poll on SQLite) for the thousand
    const worker = baton.worker({ tasks: [echo], concurrency: 20 });
    await worker.start();
    expect(await results).toEqual(jobs.map((_, i) => i));
    // The worker's watch, and the waits' lingering after the last wait: the next wait opens none.
    expect(watching).toBe(2);
    const another = await baton.enqueue(echo, 1000);
    expect(await baton.waitForResult(another.id)).toBe(1000);
    expect(watching).toBe(2);
    await worker.stop();
    expect(watching).toBe(1);
    await baton.close();
    expect(watching).toBe(0);
    expect(timers()).toBeLessThanOrEqual(timersBefore);
    if (db.driver === 'postgres') expect(await rawQuery(db, 'SELECT count(*)::int AS n FROM finished_listeners')).toEqual([{ n: 0 }]);
  });
});
