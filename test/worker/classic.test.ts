import { describe, expect, it } from 'vitest';
import { CancelledError, defineTask } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';
import { inOtherProcess } from '../helpers/client.js';

describe('the classic case: a long job beside short ones, cancelled from another process', () => {
  it('runs short jobs while the long one runs, and ends the long one cancelled without retry', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    let sawReason: unknown;
    let cleanedUpAt = 0;
    const long = defineTask('long', {
      maxAttempts: 3,
      handler: async (_: null, ctx) => {
        // Runs until cancelled: no duration races the cancel's child process.
        for (let step = 0; ; step++) {
          if (ctx.signal.aborted) {
            sawReason = ctx.signal.reason;
            cleanedUpAt = Date.now();
            throw ctx.signal.reason;
          }
          ctx.progress(step % 800, 800);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      },
    });
    const short = defineTask('short', { handler: async (n: number) => n * 2 });
    // A grace longer than the test: the job can only be recorded cancelled because
    // its handler settled, not because the grace ran out.
    const worker = baton.worker({ tasks: [long, short], concurrency: 4, cancelGrace: 600_000 });
    await worker.start();

    // Subscribe before acting: a local enqueue wakes the worker at once.
    const claimed = waitForEvent(worker, 'job:claimed', (e) => e.job.task === 'long');
    const longJob = await baton.enqueue(long, null);
    await claimed;
    const shortsDone = collectEvents(worker, 'job:completed', 5, (e) => e.job.task === 'short');
    const shorts = await baton.enqueueMany([1, 2, 3, 4, 5].map((n) => ({ task: short, payload: n })));
    const completed = await shortsDone;
    expect(completed.map((e) => e.result as number).sort((a, b) => a - b)).toEqual([2, 4, 6, 8, 10]);
    expect((await baton.getJob(longJob.id)).state).toBe('running');
    expect(shorts.every((j) => j.id > longJob.id)).toBe(true);

    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === longJob.id);
    const answer = await inOtherProcess({ database: db.url, op: 'cancel', id: longJob.id, reason: 'user asked' });
    expect(answer.type).toBe('result');
    expect((answer.value as { outcome: string }).outcome).toBe('requested');
    await cancelled;
    const recordedAt = Date.now();

    expect(sawReason).toBeInstanceOf(CancelledError);
    expect((sawReason as CancelledError).reason).toBe('user asked');
    expect(cleanedUpAt).toBeGreaterThan(0);
    expect(recordedAt).toBeGreaterThanOrEqual(cleanedUpAt);
    const job = await baton.getJob(longJob.id);
    expect(job.state).toBe('cancelled');
    expect(job.attempt).toBe(1);
    expect(job.errors).toEqual([]);
    expect(job.cancelReason).toBe('user asked');
  });
});
