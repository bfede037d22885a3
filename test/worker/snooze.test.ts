/**
 * Snooze (issue 12): `ctx.snooze(ms)` and `throw new RateLimitedError(ms)` put the job
 * back to queued for that long, the attempt not counted, the checkpoint kept; it runs
 * again once the delay has passed. Both drivers.
 */
import { describe, expect, it } from 'vitest';
import { CancelledError, defineTask, RateLimitedError, SnoozeError, ValidationError, type Job } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

describe('snooze', () => {
  it('ctx.snooze(ms) and RateLimitedError: queued again for the delay, attempt not counted, checkpoint kept; then it runs and completes on attempt 1 of 1', async () => {
    const baton = await openBaton();
    const runs: Array<{ attempt: number; checkpoint: unknown; at: number }> = [];
    const limited = defineTask('limited', {
      maxAttempts: 1, // a counted attempt would fail it for good
      handler: async (mode: 'snooze' | 'rate', ctx) => {
        runs.push({ attempt: ctx.job.attempt, checkpoint: ctx.checkpoint, at: Date.now() });
        if (ctx.checkpoint === null) {
          await ctx.saveCheckpoint({ step: 1 });
          if (mode === 'snooze') ctx.snooze(300);
          throw new RateLimitedError(300);
        }
        return { resumedFrom: ctx.checkpoint };
      },
    });
    const worker = baton.worker({ tasks: [limited], concurrency: 2, pollInterval: 20 });
    await worker.start();
    // The row right after each snooze, read from the event's listener.
    const between: Array<Promise<Job>> = [];
    worker.on('job:snoozed', (e) => between.push(baton.getJob(e.job.id)));
    const snoozes = collectEvents(worker, 'job:snoozed', 2);
    const completions = collectEvents(worker, 'job:completed', 2);
    const a = await baton.enqueue(limited, 'snooze');
    const b = await baton.enqueue(limited, 'rate');
    const [snoozed, completed] = await Promise.all([snoozes, completions]);

    expect(snoozed.map((s) => [s.job.id, s.delayMs, s.rateLimited]).sort()).toEqual([[a.id, 300, false], [b.id, 300, true]].sort());
    for (const [i, row] of (await Promise.all(between)).entries()) {
      expect(row).toMatchObject({ state: 'queued', attempt: 0, checkpoint: { step: 1 }, errors: [] });
      expect(row.runAt.getTime()).toBe(snoozed[i]!.runAt.getTime());
    }
    for (const done of completed) {
      expect(done.result).toEqual({ resumedFrom: { step: 1 } });
      // Claimed again no earlier than the snooze's runAt.
      const snooze = snoozed.find((s) => s.job.id === done.job.id)!;
      expect(done.job.startedAt!.getTime()).toBeGreaterThanOrEqual(snooze.runAt.getTime());
    }
    for (const id of [a.id, b.id]) expect(await baton.getJob(id)).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
    expect(runs.map((r) => r.attempt)).toEqual([1, 1, 1, 1]);
  });

  it('a snoozed job whose cancel is requested while it runs ends cancelled, not queued', async () => {
    const baton = await openBaton();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const task = defineTask('ignores-cancel', {
      handler: async (_: null, ctx) => {
        await gate; // the cancel request lands while the handler runs, signal ignored
        ctx.snooze(60_000);
      },
    });
    const worker = baton.worker({ tasks: [task], pollInterval: 20, cancelGrace: 60_000 });
    await worker.start();
    const claimed = waitForEvent(worker, 'job:claimed');
    const job = await baton.enqueue(task, null);
    await claimed;
    const aborted = waitForEvent(worker, 'job:aborted');
    await baton.cancel(job.id, 'stop it');
    expect((await aborted).reason).toBeInstanceOf(CancelledError);
    const cancelled = waitForEvent(worker, 'job:cancelled');
    release();
    await cancelled;
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'cancelled', cancelReason: 'stop it' });
  });

  it('a snooze of a bad length is refused with a ValidationError naming it; uncaught, it fails the attempt like any error', async () => {
    for (const bad of [-1, 1.5, Number.NaN, 2_147_483_648]) {
      const error = (() => {
        try {
          return new RateLimitedError(bad);
        } catch (e) {
          return e;
        }
      })();
      expect(error, String(bad)).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(/snooze delay must be an integer number of ms, 0..2147483647/);
    }
    expect(new RateLimitedError(0)).toBeInstanceOf(SnoozeError);
    expect(new RateLimitedError(5).retryAfterMs).toBe(5);

    const baton = await openBaton();
    const task = defineTask('bad-snooze', { maxAttempts: 1, handler: async (_: null, ctx) => ctx.snooze(-5) });
    const worker = baton.worker({ tasks: [task], pollInterval: 20 });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(task, null);
    expect((await failed).message).toMatch(/snooze delay must be an integer/);
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'failed', attempt: 1 });
  });
});
