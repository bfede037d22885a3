import { describe, expect, it } from 'vitest';
import { CancelledError, ConflictError, NotFoundError, ValidationError, defineTask, type Baton, type Job } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';
import { listFullJobs } from '../helpers/client.js';

/** Runs until cancelled; records what its signal was aborted with. */
const seen: unknown[] = [];
const waits = defineTask('waits', {
  handler: (_payload: unknown, ctx) =>
    new Promise((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => {
        seen.push(ctx.signal.reason);
        reject(ctx.signal.reason as Error);
      });
    }),
});
const quick = defineTask('quick', { handler: async () => 'ok' });

/**
 * A job on `queue` settled through the store: claimed (it must be the only queued
 * job of its queue and task) and then completed or failed, or cancelled while queued.
 */
async function settled(baton: Baton, queue: string, outcome: 'completed' | 'failed' | 'cancelled' | 'queued', task = 't'): Promise<Job> {
  const job = await baton.enqueue(task, { outcome }, { queue });
  if (outcome === 'queued') return job;
  if (outcome === 'cancelled') return (await baton.cancel(job.id)).job;
  const now = baton.clock.now();
  const [claimed] = await baton.store.jobClaim({ workerId: 'test', tasks: [task], queues: [queue], limit: 1, leaseMs: 60_000, now });
  expect(claimed?.id).toBe(job.id);
  if (outcome === 'completed') await baton.store.jobCompleteMany({ items: [{ id: job.id, token: claimed!.leaseToken, result: '1' }], now });
  else await baton.store.jobFail({ id: job.id, token: claimed!.leaseToken, error: { attempt: 1, time: now, message: 'boom', stack: null }, retryAt: null, now });
  return baton.getJob(job.id);
}

/** Every job, by id: for "nothing changed" comparisons. */
const everything = async (baton: Baton) => (await listFullJobs(baton, { limit: 1000 })).sort((a, b) => a.id - b.id);

describe('baton.jobs.retryMany', () => {
  it('failed (and cancelled) jobs matching the filter → queued, in batches, exact counts; a dry run and a bad filter change nothing; other jobs untouched', async () => {
    const baton = await openBaton();
    for (const outcome of ['failed', 'failed', 'failed', 'cancelled', 'completed', 'queued'] as const) await settled(baton, 'a', outcome);
    for (const outcome of ['failed', 'failed'] as const) await settled(baton, 'b', outcome);
    const before = await everything(baton);

    expect(await baton.jobs.retryMany({ queue: 'a' }, { dryRun: true })).toEqual({ dryRun: true, matched: 4, retried: 0 });
    await expect(baton.jobs.retryMany({})).rejects.toThrow(/give a filter .* or \{ all: true \}/);
    const wrong = await baton.jobs.retryMany({ state: 'completed' as never }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(ValidationError);
    expect((wrong as ValidationError).issues[0]).toMatchObject({ path: ['state'], message: 'retry applies to failed or cancelled jobs' });
    await expect(baton.jobs.retryMany({ queue: 'a' }, { batchSize: 0 })).rejects.toBeInstanceOf(ValidationError);
    for (const time of [Number.NaN, -1, 8.64e15]) await expect(baton.jobs.retryMany({ queue: 'a', createdBefore: new Date(time) }), String(time)).rejects.toBeInstanceOf(ValidationError);
    expect(await baton.jobs.retryMany({ queue: 'no-such-queue' })).toEqual({ dryRun: false, matched: 0, retried: 0 });
    expect(await everything(baton)).toEqual(before);

    await expect(baton.jobs.retryMany({ queue: 'a' }, { onProgress: 'yes' as never })).rejects.toBeInstanceOf(ValidationError);
    // Three failed jobs of `a`, two per batch; progress after each batch.
    const progress: number[] = [];
    expect(await baton.jobs.retryMany({ state: 'failed', queue: 'a' }, { batchSize: 2, onProgress: (n) => progress.push(n) })).toEqual({ dryRun: false, matched: 3, retried: 3 });
    expect(progress).toEqual([2, 3]);
    const after = await everything(baton);
    for (const [i, job] of before.entries()) {
      if (job.queue === 'a' && job.state === 'failed') expect(after[i]).toMatchObject({ state: 'queued', attempt: 0, errors: job.errors });
      else expect(after[i]).toEqual(job);
    }
  });
});

describe('bulk limit', () => {
  it('retry, cancel and purge touch at most `limit` jobs, lowest ids (purge: oldest finished) first; a dry run caps its count; a bad limit names the field and changes nothing', async () => {
    const baton = await openBaton();
    const failed = [];
    for (let i = 0; i < 4; i++) failed.push(await settled(baton, 'l', 'failed'));
    const queued = await Promise.all([1, 2, 3].map((n) => baton.enqueue('t', { n }, { queue: 'm' })));
    for (let i = 0; i < 3; i++) await settled(baton, 'n', 'completed');
    const before = await everything(baton);

    for (const limit of [0, 1.5, -1]) {
      const refused = await baton.jobs.retryMany({ queue: 'l' }, { limit }).catch((e: unknown) => e);
      expect(refused, String(limit)).toBeInstanceOf(ValidationError);
      expect((refused as ValidationError).issues[0]?.path).toEqual(['limit']);
      expect((refused as ValidationError).subject).toBe('options');
    }
    expect(await everything(baton)).toEqual(before);
    expect(await baton.jobs.retryMany({ queue: 'l' }, { dryRun: true, limit: 3 })).toEqual({ dryRun: true, matched: 3, retried: 0 });
    expect(await baton.jobs.retryMany({ queue: 'l' }, { dryRun: true, limit: 10 })).toEqual({ dryRun: true, matched: 4, retried: 0 });

    // A batch of 2 and a limit of 3: two pages (2, then 1), never a fourth job.
    expect(await baton.jobs.retryMany({ queue: 'l' }, { limit: 3, batchSize: 2 })).toEqual({ dryRun: false, matched: 3, retried: 3 });
    expect((await Promise.all(failed.map((j) => baton.getJob(j.id)))).map((j) => j.state)).toEqual(['queued', 'queued', 'queued', 'failed']);

    expect(await baton.jobs.cancelMany({ queue: 'm' }, { limit: 2 })).toEqual({ dryRun: false, matched: 2, cancelled: 2, requested: 0 });
    expect((await Promise.all(queued.map((j) => baton.getJob(j.id)))).map((j) => j.state)).toEqual(['cancelled', 'cancelled', 'queued']);

    expect(await baton.jobs.purge({ queue: 'n' }, { limit: 2, batchSize: 5 })).toEqual({ dryRun: false, matched: 2, deleted: 2 });
    expect((await everything(baton)).filter((j) => j.queue === 'n').map((j) => j.id)).toEqual([before.filter((j) => j.queue === 'n').at(-1)!.id]);
  });
});

describe('baton.jobs.cancelMany', () => {
  it('queued jobs matching → cancelled at once; running ones cancelled cooperatively (the handler sees CancelledError); other queues untouched', async () => {
    seen.length = 0;
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [waits, quick], queues: ['c'], concurrency: 2, cancelPollInterval: 50 });
    await worker.start();
    const claimed = collectEvents(worker, 'job:claimed', 2);
    const runningJobs = await Promise.all([1, 2].map(() => baton.enqueue(waits, {}, { queue: 'c' })));
    await claimed;
    const queued = await Promise.all([1, 2, 3].map((n) => baton.enqueue(quick, { n }, { queue: 'c', delay: 3_600_000 })));
    const outside = await baton.enqueue(quick, {}, { queue: 'd' });

    expect(await baton.jobs.cancelMany({ queue: 'c' }, { dryRun: true })).toEqual({ dryRun: true, matched: 5, cancelled: 0, requested: 0 });
    expect(await baton.jobs.cancelMany({ state: 'queued', queue: 'nope' })).toEqual({ dryRun: false, matched: 0, cancelled: 0, requested: 0 });
    await expect(baton.jobs.cancelMany({ state: 'failed' as never })).rejects.toThrow(/cancel applies to queued or running jobs/);

    const cancelledEvents = collectEvents(worker, 'job:cancelled', 2);
    expect(await baton.jobs.cancelMany({ queue: 'c' }, { reason: 'bulk', batchSize: 2 })).toEqual({ dryRun: false, matched: 5, cancelled: 3, requested: 2 });
    for (const job of queued) expect(await baton.getJob(job.id)).toMatchObject({ state: 'cancelled', cancelReason: 'bulk' });
    const events = await cancelledEvents;
    expect(events.map((e) => e.job.id).sort()).toEqual(runningJobs.map((j) => j.id).sort());
    expect(seen).toHaveLength(2);
    for (const reason of seen) {
      expect(reason).toBeInstanceOf(CancelledError);
      expect((reason as CancelledError).reason).toBe('bulk');
    }
    for (const job of runningJobs) expect((await baton.getJob(job.id)).state).toBe('cancelled');
    expect(await baton.getJob(outside.id)).toEqual(outside);
  });
});

describe('baton.jobs.purge', () => {
  it('deletes finished jobs matching the filter, in batches; an empty filter is refused unless all; queued and running jobs are never touched', async () => {
    const baton = await openBaton();
    for (const outcome of ['completed', 'completed', 'failed', 'cancelled', 'queued'] as const) await settled(baton, 'p', outcome);
    await settled(baton, 'r', 'completed');
    const before = await everything(baton);

    for (const filter of [{}, { all: false }]) await expect(baton.jobs.purge(filter)).rejects.toThrow(/give a filter \(state, queue, task or finishedBefore\), or \{ all: true \}/);
    await expect(baton.jobs.purge({ state: 'queued' as never })).rejects.toThrow(/purge applies to completed or failed or cancelled jobs/);
    await expect(baton.jobs.purge({ createdBefore: new Date() } as never)).rejects.toBeInstanceOf(ValidationError);
    expect(await baton.jobs.purge({ queue: 'p' }, { dryRun: true })).toEqual({ dryRun: true, matched: 4, deleted: 0 });
    expect(await baton.jobs.purge({ finishedBefore: new Date(0) })).toEqual({ dryRun: false, matched: 0, deleted: 0 });
    expect(await everything(baton)).toEqual(before);

    expect(await baton.jobs.purge({ state: 'completed', queue: 'p' }, { batchSize: 1 })).toEqual({ dryRun: false, matched: 2, deleted: 2 });
    expect((await everything(baton)).map((j) => `${j.queue}:${j.state}`)).toEqual(['p:failed', 'p:cancelled', 'p:queued', 'r:completed']);
    expect(await baton.jobs.purge({ all: true })).toEqual({ dryRun: false, matched: 3, deleted: 3 });
    expect((await everything(baton)).map((j) => `${j.queue}:${j.state}`)).toEqual(['p:queued']);
  });
});

describe('baton.jobs.delete', () => {
  it('deletes a job that is not running; a running job → ConflictError naming its state; unknown or malformed ids → NotFoundError', async () => {
    const baton = await openBaton();
    const done = await settled(baton, 'x', 'completed');
    const queued = await settled(baton, 'x', 'queued', 'other');
    const [running] = await baton.store.jobClaim({ workerId: 'test', tasks: ['other'], queues: ['x'], limit: 1, leaseMs: 60_000, now: baton.clock.now() });

    expect(await baton.jobs.delete(done.id)).toEqual({ id: done.id, state: 'completed' });
    await expect(baton.getJob(done.id)).rejects.toBeInstanceOf(NotFoundError);
    const refused = await baton.jobs.delete(running!.id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConflictError);
    expect(refused).toMatchObject({ state: 'running', message: `job ${queued.id} is running; a running job cannot be deleted (cancel it first)` });
    expect((await baton.getJob(running!.id)).state).toBe('running');
    for (const id of [done.id, 987_654, 'abc', 1.5, 0] as number[]) await expect(baton.jobs.delete(id), String(id)).rejects.toBeInstanceOf(NotFoundError);
    // A string id is named as a string: "no job with id 1" would be wrong while job 1 exists.
    await expect(baton.jobs.delete(String(running!.id) as never)).rejects.toThrow(`no job with id "${running!.id}" (job ids are positive integers)`);
    await expect(baton.jobs.delete(1.5)).rejects.toThrow('no job with id 1.5 (job ids are positive integers)');
  });
});

describe('baton.queues', () => {
  it('pause refuses a queue Baton does not know (unless force) and a bad name, writing nothing; list shows the paused state', async () => {
    const baton = await openBaton();
    await baton.enqueue(quick, {}, { queue: 'known' });
    const unknown = await baton.queues.pause('typo').catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((unknown as Error).message).toMatch(/no queue named "typo".*\{ force: true \}/);
    const resumeUnknown = await baton.queues.resume('typo').catch((e: unknown) => e);
    expect(resumeUnknown).toBeInstanceOf(NotFoundError);
    expect((resumeUnknown as Error).message).not.toMatch(/force/); // resume has no force to offer
    for (const name of ['', 'x'.repeat(201), 'nul\u0000'] as const) await expect(baton.queues.pause(name, { force: true }), JSON.stringify(name)).rejects.toBeInstanceOf(ValidationError);
    await expect(baton.queues.pause('known', { force: 'yes' } as never)).rejects.toBeInstanceOf(ValidationError);
    expect((await baton.queues.list()).filter((q) => q.paused)).toEqual([]);

    expect(await baton.queues.pause('known')).toEqual({ queue: 'known', paused: true, changed: true });
    expect(await baton.queues.pause('known')).toEqual({ queue: 'known', paused: true, changed: false });
    expect(await baton.queues.pause('later', { force: true })).toEqual({ queue: 'later', paused: true, changed: true });
    const list = await baton.queues.list();
    expect(list.map((q) => [q.name, q.paused, q.counts.queued])).toEqual([['known', true, 1], ['later', true, 0]]);
    expect(list[0]!.pausedAt).toBeInstanceOf(Date);
    expect(await baton.queues.resume('later')).toEqual({ queue: 'later', paused: false, changed: true });
    expect(await baton.queues.resume('later')).toEqual({ queue: 'later', paused: false, changed: false });

    // A queue whose only job failed is listed by `queues.list()`, so it can be paused (then its failed jobs retried).
    await settled(baton, 'only-failed', 'failed');
    expect(await baton.queues.pause('only-failed')).toEqual({ queue: 'only-failed', paused: true, changed: true });
  });

  it("resume wakes this process's worker at once (its poll is an hour away)", async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [quick], queues: ['w'], pollInterval: 3_600_000 });
    await baton.queues.pause('w', { force: true });
    await worker.start();
    const job = await baton.enqueue(quick, {}, { queue: 'w' });
    await worker.loops.fetch(); // a claim now skips the paused queue
    expect((await baton.getJob(job.id)).state).toBe('queued');
    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    await baton.queues.resume('w');
    await completed;
  });
});
