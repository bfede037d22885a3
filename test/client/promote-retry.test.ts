/**
 * `baton.promote(id)` and `baton.retry(id, { fresh })` with a worker (issue 30, items
 * 3 and 8), both drivers: a promoted job is claimed at once by an idle worker (not at
 * its next poll), a plain retry resumes from the checkpoint and a fresh one starts over.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, NotFoundError, RateLimitedError, ValidationError } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

/** Fails its first run after saving a checkpoint; later runs return the checkpoint they started from. */
function resumableTask() {
  const state = { fail: true };
  const task = defineTask('resumable', {
    maxAttempts: 1,
    handler: async (_payload: null, ctx) => {
      const from = ctx.checkpoint;
      await ctx.saveCheckpoint({ step: 41 });
      ctx.progress(41, 60);
      if (state.fail) throw new Error('stopped at step 41');
      return { from };
    },
  });
  return { task, state };
}

describe('promote', () => {
  it('a delayed job is run at once by an idle worker polling every 10 minutes: the promotion wakes it', async () => {
    const baton = await openBaton();
    const quick = defineTask('quick', { handler: async () => 'done' });
    const worker = baton.worker({ tasks: [quick], pollInterval: 600_000 });
    await worker.start();
    const job = await baton.enqueue(quick, null, { delay: 3_600_000 });
    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id, 30_000);
    const answer = await baton.promote(job.id);
    expect(answer.outcome).toBe('promoted');
    expect(answer.job.runAt.getTime()).toBeLessThanOrEqual(baton.clock.now());
    await completed;
    await worker.stop();
    const { timeline } = await baton.getJobTimeline(job.id);
    expect(timeline.map((e) => e.type)).toEqual(['enqueued', 'promoted', 'started', 'completed']);
    expect(timeline[1]).toMatchObject({ runAt: job.runAt, summary: `promoted: due at once (was due ${job.runAt.toISOString()})` });
  });

  it('a snoozed job runs now; a completed one is unchanged and says so; an unknown id → NotFoundError', async () => {
    const baton = await openBaton();
    let snoozes = 0;
    const limited = defineTask('limited', {
      handler: async () => {
        if (snoozes++ === 0) throw new RateLimitedError(3_600_000);
        return 'ran';
      },
    });
    const worker = baton.worker({ tasks: [limited], pollInterval: 600_000 });
    const snoozed = waitForEvent(worker, 'job:snoozed');
    await worker.start();
    const job = await baton.enqueue(limited, null);
    await snoozed;
    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id, 30_000);
    expect((await baton.promote(job.id)).outcome).toBe('promoted');
    expect((await completed).result).toBe('ran');
    await worker.stop();
    expect(await baton.promote(job.id)).toMatchObject({ outcome: 'unchanged', job: { id: job.id, state: 'completed' } });
    await expect(baton.promote(987_654)).rejects.toBeInstanceOf(NotFoundError);
    await expect(baton.promote(-1)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('retry from scratch', () => {
  it('retry(id) resumes from the checkpoint the failed run saved; retry(id, { fresh: true }) starts over (checkpoint and progress cleared)', async () => {
    const baton = await openBaton();
    const { task, state } = resumableTask();
    const worker = baton.worker({ tasks: [task], pollInterval: 50 });
    await worker.start();
    const run = async (retry: () => Promise<unknown>, id: number) => {
      const done = waitForEvent(worker, 'job:completed', (e) => e.job.id === id);
      await retry();
      return (await done).result;
    };
    const failedOnce = async () => {
      state.fail = true;
      const failed = waitForEvent(worker, 'job:failed');
      const job = await baton.enqueue(task, null);
      await failed;
      expect(await baton.getJob(job.id)).toMatchObject({ state: 'failed', checkpoint: { step: 41 }, progress: { current: 41, total: 60 } });
      state.fail = false;
      return job.id;
    };
    const resumed = await failedOnce();
    expect(await run(() => baton.retry(resumed), resumed)).toEqual({ from: { step: 41 } });
    const fresh = await failedOnce();
    await expect(baton.retry(fresh, { fresh: 'yes' } as never)).rejects.toMatchObject({ name: 'ValidationError', issues: [{ path: ['fresh'] }] });
    await expect(baton.retry(fresh, { fresh: true, other: 1 } as never)).rejects.toBeInstanceOf(ValidationError);
    expect(await run(async () => expect(await baton.retry(fresh, { fresh: true })).toMatchObject({ checkpoint: null, progress: null }), fresh)).toEqual({ from: null });
    await worker.stop();
    const summaries = (await baton.getJobTimeline(fresh)).timeline.filter((e) => e.type === 'retried').map((e) => e.summary);
    expect(summaries).toEqual(['retried by hand from scratch (attempts start over; checkpoint and progress cleared)']);
  });

  it('jobs.retryMany({ ... }, { fresh: true }) starts each from scratch; a bad fresh is refused naming it', async () => {
    const baton = await openBaton();
    const { task } = resumableTask();
    const worker = baton.worker({ tasks: [task], pollInterval: 50 });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(task, null);
    await failed;
    await worker.stop();
    await expect(baton.jobs.retryMany({ task: 'resumable' }, { fresh: 1 } as never)).rejects.toMatchObject({ name: 'ValidationError', issues: [{ path: ['fresh'] }] });
    expect(await baton.jobs.retryMany({ task: 'resumable' }, { fresh: true })).toMatchObject({ matched: 1, retried: 1 });
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'queued', checkpoint: null, progress: null });
  });
});
