import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError, ValidationError, defineTask, type Baton, type JobState } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

const echo = defineTask('echo', { handler: async (payload: { n: number }) => payload.n });
const flaky = defineTask('flaky', {
  maxAttempts: 2,
  backoff: { type: 'fixed', delay: 0 },
  handler: async (payload: { message: string }) => {
    throw new Error(payload.message);
  },
});

/** Claims one job directly through the store and records a final failure (the job must be first in claim order). */
async function failDirectly(baton: Baton, id: number, message = 'went wrong'): Promise<void> {
  const claimed = await baton.store.jobClaim({ workerId: 'test', tasks: [(await baton.getJob(id)).task], queues: [(await baton.getJob(id)).queue], limit: 1, leaseMs: 60_000, now: Date.now() });
  expect(claimed.map((j) => j.id)).toEqual([id]);
  const ok = await baton.store.jobFail({ id, token: claimed[0]!.leaseToken, error: { attempt: 1, time: Date.now(), message, stack: null }, retryAt: null, now: Date.now() });
  expect(ok).toBe(true);
}

describe('getJob', () => {
  it('an id that cannot name a job (not a positive integer) is NotFoundError for getJob, cancel and retry on every driver', async () => {
    const baton = await openBaton();
    await baton.enqueue(echo, { n: 1 });
    for (const id of ['abc', 1e30, 1.5, 0, -1, Number.NaN] as unknown as number[]) {
      await expect(baton.getJob(id), String(id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(baton.cancel(id), String(id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(baton.retry(id), String(id)).rejects.toBeInstanceOf(NotFoundError);
    }
    expect((await baton.listJobs()).map((j) => j.state)).toEqual(['queued']);
  });

  it('returns the job with every readable field', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(echo, { n: 1 }, { key: 'k', queue: 'q', priority: 2 });
    const read = await baton.getJob(job.id);
    expect(read).toEqual(job);
    expect(read).toMatchObject({
      id: job.id, queue: 'q', task: 'echo', payload: { n: 1 }, state: 'queued', priority: 2, attempt: 0, maxAttempts: 3,
      key: 'k', progress: null, checkpoint: null, result: null, errors: [], cancelRequestedAt: null, cancelReason: null,
      startedAt: null, finishedAt: null, leaseOwner: null, leaseExpiresAt: null,
    });
    expect(read.createdAt).toBeInstanceOf(Date);
    expect(read.runAt).toBeInstanceOf(Date);
  });

  it('an unknown id → NotFoundError naming the id', async () => {
    const baton = await openBaton();
    const error = await baton.getJob(424242).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).code).toBe('not_found');
    expect((error as Error).message).toContain('424242');
  });
});

describe('listJobs', () => {
  async function seed(baton: Baton) {
    const jobs = await baton.enqueueMany([
      { task: echo, payload: { n: 1 }, options: { queue: 'mail' } },
      { task: 'report', payload: { n: 2 }, options: { queue: 'mail' } },
      { task: echo, payload: { n: 3 } },
      { task: 'report', payload: { n: 4 } },
      { task: echo, payload: { n: 5 }, options: { queue: 'mail', priority: -1 } }, // claimed first by failDirectly
    ]);
    await baton.cancel(jobs[3]!.id);
    await failDirectly(baton, jobs[4]!.id);
    return jobs.map((j) => j.id);
  }

  it('lists newest first (id descending)', async () => {
    const baton = await openBaton();
    const ids = await seed(baton);
    expect((await baton.listJobs()).map((j) => j.id)).toEqual([...ids].reverse());
  });

  it('filters by state, queue and task, alone and combined', async () => {
    const baton = await openBaton();
    const [j1, j2, j3, j4, j5] = await seed(baton);
    const ids = async (filter: Parameters<Baton['listJobs']>[0]) => (await baton.listJobs(filter)).map((j) => j.id);
    expect(await ids({ state: 'queued' })).toEqual([j3, j2, j1]);
    expect(await ids({ state: 'cancelled' })).toEqual([j4]);
    expect(await ids({ state: 'failed' })).toEqual([j5]);
    expect(await ids({ state: 'running' })).toEqual([]);
    expect(await ids({ queue: 'mail' })).toEqual([j5, j2, j1]);
    expect(await ids({ queue: 'nope' })).toEqual([]);
    expect(await ids({ task: 'report' })).toEqual([j4, j2]);
    expect(await ids({ queue: 'mail', task: 'echo' })).toEqual([j5, j1]);
    expect(await ids({ queue: 'mail', task: 'echo', state: 'queued' })).toEqual([j1]);
  });

  it('pages with limit and the `before` id cursor, without gaps or repeats', async () => {
    const baton = await openBaton();
    const created = await baton.enqueueMany(Array.from({ length: 23 }, (_, n) => ({ task: echo, payload: { n } })));
    const seen: number[] = [];
    let before: number | undefined;
    for (;;) {
      const page = await baton.listJobs({ limit: 5, ...(before === undefined ? {} : { before }) });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(5);
      seen.push(...page.map((j) => j.id));
      before = page.at(-1)!.id;
    }
    expect(seen).toEqual(created.map((j) => j.id).reverse());
  });

  it('`before` combines with filters', async () => {
    const baton = await openBaton();
    const [j1, j2, , , j5] = await seed(baton);
    expect((await baton.listJobs({ queue: 'mail', before: j5 })).map((j) => j.id)).toEqual([j2, j1]);
    expect((await baton.listJobs({ queue: 'mail', before: j2, limit: 1 })).map((j) => j.id)).toEqual([j1]);
  });

  it('defaults to 50 jobs', async () => {
    const baton = await openBaton();
    await baton.enqueueMany(Array.from({ length: 60 }, (_, n) => ({ task: echo, payload: { n } })));
    expect(await baton.listJobs()).toHaveLength(50);
    expect(await baton.listJobs({ limit: 1000 })).toHaveLength(60);
  });

  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['an unknown state', { state: 'done' }, 'state'],
    ['a derived view name as state', { state: 'delayed' }, 'state'],
    ['limit 0', { limit: 0 }, 'limit'],
    ['limit 1001', { limit: 1001 }, 'limit'],
    ['limit 2.5', { limit: 2.5 }, 'limit'],
    ['before 0', { before: 0 }, 'before'],
    ['before as a string', { before: '10' }, 'before'],
    ['a queue with NUL (no job can carry it)', { queue: 'mail\u0000' }, 'queue'],
    ['a task with a lone surrogate', { task: 'send\ud800' }, 'task'],
  ];
  for (const [name, options, field] of bad) {
    it(`${name} → ValidationError naming ${field}`, async () => {
      const baton = await openBaton();
      const error = await baton.listJobs(options as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues.map((i) => i.path[0])).toContain(field);
    });
  }
});

describe('queueCounts', () => {
  it('counts jobs per queue and state, optionally by queue prefix', async () => {
    const baton = await openBaton();
    const jobs = await baton.enqueueMany([
      { task: echo, payload: { n: 1 }, options: { queue: 'mail.out' } },
      { task: echo, payload: { n: 2 }, options: { queue: 'mail.out' } },
      { task: echo, payload: { n: 3 }, options: { queue: 'mail.in' } },
      { task: echo, payload: { n: 4 } },
    ]);
    await baton.cancel(jobs[1]!.id);
    const counts = await baton.queueCounts();
    const sorted = (list: Array<{ queue: string; state: JobState; count: number }>) =>
      [...list].sort((a, b) => a.queue.localeCompare(b.queue) || a.state.localeCompare(b.state));
    expect(sorted(counts)).toEqual([
      { queue: 'default', state: 'queued', count: 1 },
      { queue: 'mail.in', state: 'queued', count: 1 },
      { queue: 'mail.out', state: 'cancelled', count: 1 },
      { queue: 'mail.out', state: 'queued', count: 1 },
    ]);
    expect(sorted(await baton.queueCounts('mail.'))).toEqual([
      { queue: 'mail.in', state: 'queued', count: 1 },
      { queue: 'mail.out', state: 'cancelled', count: 1 },
      { queue: 'mail.out', state: 'queued', count: 1 },
    ]);
    // A prefix is literal: LIKE wildcards match nothing special.
    expect(await baton.queueCounts('mail%')).toEqual([]);
    expect(await baton.queueCounts('mail_')).toEqual([]);
    expect(await baton.queueCounts('x')).toEqual([]);
  });

  it('an empty database has no counts', async () => {
    const baton = await openBaton();
    expect(await baton.queueCounts()).toEqual([]);
  });
});

describe('retry', () => {
  it('a failed job goes back to queued with attempt 0; its errors are kept; a worker runs it again', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [flaky], pollInterval: 20 });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed', (e) => e.retryAt === null);
    const job = await baton.enqueue(flaky, { message: 'nope' });
    await failed;
    const before = await baton.getJob(job.id);
    expect(before).toMatchObject({ state: 'failed', attempt: 2 });
    expect(before.errors.map((e) => [e.attempt, e.message])).toEqual([[1, 'nope'], [2, 'nope']]);
    expect(before.finishedAt).toBeInstanceOf(Date);

    const enqueued = waitForEvent(baton, 'job:enqueued', (e) => e.job.id === job.id);
    const claimedAgain = waitForEvent(worker, 'job:claimed', (e) => e.job.id === job.id);
    const retried = await baton.retry(job.id);
    // The answer is the job as retry left it (the worker may claim it a moment later).
    expect(retried).toMatchObject({ id: job.id, state: 'queued', attempt: 0, finishedAt: null, result: null });
    expect(retried.errors).toHaveLength(2);
    expect(retried.runAt.getTime()).toBeLessThanOrEqual(Date.now());
    await enqueued;
    const again = await claimedAgain;
    expect(again.job.attempt).toBe(1); // counting restarted
  });

  it('retry of a failed job (no worker): queued, attempt 0, errors kept, lease and cancel fields cleared', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(echo, { n: 1 });
    await failDirectly(baton, job.id, 'first failure');
    const retried = await baton.retry(job.id);
    expect(retried).toMatchObject({ state: 'queued', attempt: 0, finishedAt: null, leaseOwner: null, leaseExpiresAt: null, cancelRequestedAt: null });
    expect(retried.errors.map((e) => e.message)).toEqual(['first failure']);
    expect(await baton.getJob(job.id)).toEqual(retried);
  });

  it('retry of a cancelled job: queued again, cancel request cleared', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(echo, { n: 1 });
    await baton.cancel(job.id, 'oops');
    const retried = await baton.retry(job.id);
    expect(retried).toMatchObject({ state: 'queued', attempt: 0, cancelRequestedAt: null, cancelReason: null, finishedAt: null });
  });

  it('retry of a completed job → ConflictError naming the state; nothing changes', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [echo] });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(echo, { n: 7 });
    await done;
    const before = await baton.getJob(job.id);
    const error = await baton.retry(job.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).code).toBe('conflict');
    expect((error as ConflictError).state).toBe('completed');
    expect((error as Error).message).toContain('completed');
    expect(await baton.getJob(job.id)).toEqual(before);
  });

  it('retry of a queued or running job → ConflictError naming the state', async () => {
    const baton = await openBaton();
    const queued = await baton.enqueue(echo, { n: 1 });
    const error = await baton.retry(queued.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).state).toBe('queued');
    await baton.store.jobClaim({ workerId: 'test', tasks: ['echo'], queues: ['default'], limit: 1, leaseMs: 60_000, now: Date.now() });
    const running = await baton.retry(queued.id).catch((e: unknown) => e);
    expect(running).toBeInstanceOf(ConflictError);
    expect((running as Error).message).toContain('running');
  });

  it('retry of an unknown id → NotFoundError', async () => {
    const baton = await openBaton();
    await expect(baton.retry(999)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('retry of a job whose key is now held by another live job → ConflictError; both jobs unchanged', async () => {
    const baton = await openBaton();
    const old = await baton.enqueue(echo, { n: 1 }, { key: 'nightly' });
    await failDirectly(baton, old.id);
    const live = await baton.enqueue(echo, { n: 2 }, { key: 'nightly' });
    expect(live.id).not.toBe(old.id);
    const error = await baton.retry(old.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as Error).message).toContain('nightly');
    expect((await baton.getJob(old.id)).state).toBe('failed');
    expect((await baton.getJob(live.id)).state).toBe('queued');

    // Once the live job is terminal, the old one can be retried.
    await baton.cancel(live.id);
    expect((await baton.retry(old.id)).state).toBe('queued');
  });
});
