/**
 * A job handed back keeps its place in line (issue 30, item 1): a job released at
 * shutdown is claimed again before the backlog that waited behind it, and resumes from
 * its checkpoint. Before the fix its runAt was reset to the release time and it ran
 * after every job enqueued before that. Both drivers.
 */
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

describe('hand-off order', () => {
  it('a backlog, a worker (concurrency 1, drain 0) stopped while running A: a new worker runs A first, from its checkpoint, then the backlog in order', async () => {
    const baton = await openBaton();
    const started: string[] = [];
    const report = defineTask('report', {
      handler: async (name: string, ctx) => {
        started.push(name);
        if (name !== 'A' || ctx.checkpoint !== null) return { name, resumedFrom: ctx.checkpoint };
        await ctx.saveCheckpoint({ step: 41 });
        // Runs until the shutdown aborts it (drainTimeout 0).
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        throw ctx.signal.reason;
      },
    });
    const [a, b, c] = await baton.enqueueMany(['A', 'B', 'C'].map((name) => ({ task: report, payload: name })));

    const w1 = baton.worker({ tasks: [report], concurrency: 1, drainTimeout: 0, abortGrace: 5000 });
    const checkpointed = waitForEvent(w1, 'job:checkpoint', (e) => e.job.id === a!.id);
    await w1.start();
    await checkpointed;
    const summary = await w1.stop();
    expect(summary).toMatchObject({ finished: 0, released: 1, unreleased: [] });
    const released = await baton.getJob(a!.id);
    expect(released).toMatchObject({ state: 'queued', attempt: 0, checkpoint: { step: 41 } });
    expect(released.runAt.getTime()).toBe(a!.runAt.getTime()); // its place in line, kept

    const w2 = baton.worker({ tasks: [report], concurrency: 1 });
    const completed = collectEvents(w2, 'job:completed', 3);
    await w2.start();
    const done = await completed;
    await w2.stop();
    expect(done.map((e) => e.job.id)).toEqual([a!.id, b!.id, c!.id]);
    expect(done[0]!.result).toEqual({ name: 'A', resumedFrom: { step: 41 } });
    expect(started).toEqual(['A', 'A', 'B', 'C']);
  });
});
