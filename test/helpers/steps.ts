import { defineTask, type Baton, type Job, type Worker } from 'baton-jobs';
import { waitForEvent } from './events.js';

/**
 * A task whose run leaves one step of each stored state: `charge` completed, `flaky`
 * failed (two tries; the handler catches its error and goes on), then a
 * `receive('shipped', { timeout: 60 s })` that finds no message and suspends the job
 * (`baton:receive:shipped` waiting). A message on `shipped` completes it with that payload.
 */
export const orderTask = defineTask('order', {
  handler: async (_: null, ctx) => {
    const charged = await ctx.step('charge', () => ({ charged: 42 }));
    try {
      await ctx.step('flaky', () => {
        throw new Error('carrier down');
      }, { maxAttempts: 2, backoff: { type: 'fixed', delay: 0, jitter: false } });
    } catch {
      // recorded as failed; the order goes on without it
    }
    const shipped = await ctx.receive('shipped', { timeout: 60_000 });
    return { charged, shipped };
  },
});

/** Enqueues an {@link orderTask} job on a started worker of `baton` and resolves once it waits for its message. */
export async function waitingOrder(baton: Baton, worker: Worker): Promise<Job> {
  const waiting = waitForEvent(worker, 'job:waiting', (e) => e.job.task === 'order');
  const job = await baton.enqueue(orderTask, null);
  await waiting;
  return job;
}

/**
 * A task whose attempt 1 stores step `old` and fails, and whose attempt 2 has only step `new`:
 * `old` is reported orphaned when attempt 2 completes (a step renamed between two deploys).
 */
export const renamedTask = defineTask('renamed', {
  maxAttempts: 2,
  backoff: { type: 'fixed', delay: 0, jitter: false },
  handler: async (_: null, ctx) => {
    if (ctx.job.attempt === 1) {
      await ctx.step('old', () => 1);
      throw new Error('first attempt fails');
    }
    return ctx.step('new', () => 2);
  },
});
