/**
 * A worker writes the jobs that just finished in the transaction of the claim that
 * fills their slots (Store.jobCompleteAndClaim: one commit for both, issue 14), and
 * writes them alone once it stops claiming. On a store that carries several statements
 * at once (PostgreSQL's pool, `claimsInFlight` > 1), completions that would wait behind
 * a claim in flight are written beside it instead (issue 33).
 */
import { describe, expect, it } from 'vitest';
import { defineTask, type Worker } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

describe('completions ride with the next claim', () => {
  it('a drain at concurrency 10: every job completed once, in fewer writes than jobs; with one claim at a time (SQLite), every completion written with a claim, none by a transaction of its own', async () => {
    const calls = new Map<string, number>();
    const baton = await openBaton({}, (op) => void calls.set(op, (calls.get(op) ?? 0) + 1));
    const noop = defineTask('noop', { handler: async (n: number) => n * 2 });
    const jobs = await baton.enqueueMany(Array.from({ length: 200 }, (_, n) => ({ task: noop, payload: n })));
    const worker = baton.worker({ tasks: [noop], concurrency: 10 });
    const completed = collectEvents(worker, 'job:completed', 200);
    await worker.start();
    const events = await completed;
    expect(new Set(events.map((e) => e.job.id)).size).toBe(200);
    const stored = await Promise.all(jobs.map((job) => baton.getJob(job.id)));
    expect(stored.map((job) => [job.state, job.result, job.attempt])).toEqual(jobs.map((job) => ['completed', (job.payload as number) * 2, 1]));
    if (baton.store.claimsInFlight === 1) expect(calls.get('jobCompleteMany') ?? 0).toBe(0);
    // Batched: fewer writes than jobs (each call completes the jobs that ended since the last one).
    expect(calls.get('jobCompleteAndClaim')).toBeGreaterThan(0);
    expect((calls.get('jobCompleteAndClaim') ?? 0) + (calls.get('jobCompleteMany') ?? 0)).toBeLessThan(200);
  });

  it('a job that ends after stop() began is written by the completer alone and counts as finished', async () => {
    const baton = await openBaton();
    let worker!: Worker;
    let stopping!: ReturnType<Worker['stop']>;
    const last = defineTask('last', {
      handler: async () => {
        stopping = worker.stop(); // the worker claims nothing more from here on
        return 'done';
      },
    });
    const job = await baton.enqueue(last, undefined);
    worker = baton.worker({ tasks: [last], concurrency: 2 });
    const completed = waitForEvent(worker, 'job:completed');
    await worker.start();
    expect((await completed).job.id).toBe(job.id);
    expect(await stopping).toMatchObject({ finished: 1, released: 0, abandoned: 0, unreleased: [] });
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'completed', result: 'done' });
  });
});
