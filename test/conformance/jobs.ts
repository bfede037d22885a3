import { describe, expect, it } from 'vitest';
import { ConflictError } from 'baton-jobs';
import type { Store } from '../../src/store/store.js';
import { claim, claimOne, get, insert, ms, newJob, running, T0, type Harness } from './harness.js';

/** Inserting, claiming, cancelling, retrying and reading jobs. */
export function jobTests(h: Harness): void {
  describe('jobInsertMany', () => {
    it('inserts in input order, every field as given, queued with attempt 0', async () => {
      const { store } = await h.setup();
      const jobs = [
        newJob({ task: 'a', payload: '{"n":1,"s":"é \\u2028"}', priority: -5, runAt: T0 + 60_000, maxAttempts: 7, timeoutMs: 2500 }),
        newJob({ task: 'b', queue: 'emails', payload: '[1,2]', key: 'k-1' }),
        newJob({ task: 'c', payload: 'null' }),
      ];
      const inserted = await store.jobInsertMany({ jobs, now: T0 - 1000 });
      expect(inserted.map((i) => i.created)).toEqual([true, true, true]);
      expect(inserted.map((i) => i.job.task)).toEqual(['a', 'b', 'c']);
      const ids = inserted.map((i) => i.job.id);
      expect([...ids].sort((x, y) => x - y)).toEqual(ids);
      expect(new Set(ids).size).toBe(3);
      const [a, b, c] = inserted.map((i) => i.job);
      expect(a).toMatchObject({
        queue: 'default',
        task: 'a',
        payload: { n: 1, s: 'é \u2028' },
        state: 'queued',
        priority: -5,
        attempt: 0,
        maxAttempts: 7,
        timeoutMs: 2500,
        key: null,
        progress: null,
        checkpoint: null,
        result: null,
        errors: [],
        cancelRequestedAt: null,
        cancelReason: null,
        startedAt: null,
        finishedAt: null,
        leaseOwner: null,
        leaseExpiresAt: null,
        scheduleName: null,
        scheduledFor: null,
      });
      expect(ms(a!.runAt)).toBe(T0 + 60_000);
      expect(ms(a!.createdAt)).toBe(T0 - 1000);
      expect(b).toMatchObject({ queue: 'emails', payload: [1, 2], key: 'k-1' });
      expect(c!.payload).toBeNull();
      for (const job of [a, b, c]) expect(await store.jobGet({ id: job!.id })).toEqual(job);
    });

    it('an empty batch inserts nothing', async () => {
      const { store } = await h.setup();
      expect(await store.jobInsertMany({ jobs: [], now: T0 })).toEqual([]);
      expect(await store.jobList({ limit: 10 })).toEqual([]);
    });

    it('a key with a queued or running job returns that job (created: false); a finished one does not block it', async () => {
      const { store } = await h.setup();
      const first = await insert(store, { key: 'k' });
      const again = await store.jobInsertMany({ jobs: [newJob({ key: 'k', task: 'other' })], now: T0 + 1 });
      expect(again).toEqual([{ job: first, created: false }]);

      const claimed = await claimOne(store);
      const whileRunning = await store.jobInsertMany({ jobs: [newJob({ key: 'k' })], now: T0 + 2 });
      expect(whileRunning[0]).toMatchObject({ created: false, job: { id: first.id, state: 'running' } });

      expect(await store.jobCompleteMany({ items: [{ id: claimed.id, token: claimed.leaseToken, result: '1' }], now: T0 + 3 })).toEqual([claimed.id]);
      const afterFinish = await store.jobInsertMany({ jobs: [newJob({ key: 'k' })], now: T0 + 4 });
      expect(afterFinish[0]!.created).toBe(true);
      expect(afterFinish[0]!.job.id).not.toBe(first.id);
    });

    it('the same key twice in one batch creates one job and returns it for both, in input order', async () => {
      const { store } = await h.setup();
      const inserted = await store.jobInsertMany({
        jobs: [newJob({ task: 'x' }), newJob({ key: 'dup', task: 'first' }), newJob({ task: 'y' }), newJob({ key: 'dup', task: 'second' }), newJob({ task: 'z' })],
        now: T0,
      });
      expect(inserted.map((i) => [i.job.task, i.created])).toEqual([
        ['x', true],
        ['first', true],
        ['y', true],
        ['first', false],
        ['z', true],
      ]);
      expect(inserted[3]!.job.id).toBe(inserted[1]!.job.id);
      expect(await store.jobList({ limit: 10 })).toHaveLength(4);
    });

    it('is all-or-nothing: a row the database refuses leaves no job of the batch', async () => {
      const { store } = await h.setup();
      const bad = newJob({ task: null as unknown as string }); // NOT NULL violation
      const error = await store.jobInsertMany({ jobs: [newJob({ task: 'a' }), newJob({ key: 'k' }), newJob({ task: 'b' }), bad], now: T0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(await store.jobList({ limit: 10 })).toEqual([]);
      // The key was not taken by the rolled-back batch.
      expect((await store.jobInsertMany({ jobs: [newJob({ key: 'k' })], now: T0 }))[0]!.created).toBe(true);
    });

    it('two store instances inserting the same keys at once: exactly one job per key', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      const keys = Array.from({ length: 20 }, (_, n) => `key-${n}`);
      const attempt = (s: Store, who: string) => keys.map((key) => s.jobInsertMany({ jobs: [newJob({ key, task: who })], now: T0 }));
      const answers = (await Promise.all([...attempt(store, 'one'), ...attempt(other, 'two')])).map((a) => a[0]!);
      for (const key of keys) {
        const forKey = answers.filter((a) => a.job.key === key);
        expect(forKey, key).toHaveLength(2);
        expect(forKey.filter((a) => a.created), key).toHaveLength(1);
        expect(forKey[0]!.job.id, key).toBe(forKey[1]!.job.id);
      }
      const stored = await store.jobList({ limit: 100 });
      expect(stored).toHaveLength(keys.length);
      expect(new Set(stored.map((j) => j.key)).size).toBe(keys.length);
    });
  });

  describe('jobClaim', () => {
    it('claims in order priority, runAt, id and returns the claims in that order', async () => {
      const { store } = await h.setup();
      const at = (p: number, runAt: number) => newJob({ priority: p, runAt });
      const ins = (await store.jobInsertMany({ jobs: [at(1, T0 - 10), at(0, T0 - 5), at(0, T0 - 20), at(1, T0 - 10), at(-1, T0)], now: T0 - 100 })).map((i) => i.job.id);
      const expected = [ins[4], ins[2], ins[1], ins[0], ins[3]];
      const first = await claim(store, { limit: 2 });
      const rest = await claim(store, { limit: 10 });
      expect(first.map((j) => j.id)).toEqual(expected.slice(0, 2));
      expect(rest.map((j) => j.id)).toEqual(expected.slice(2));
      expect(await claim(store)).toEqual([]);
    });

    it('takes at most `limit` jobs', async () => {
      const { store } = await h.setup();
      await store.jobInsertMany({ jobs: Array.from({ length: 5 }, () => newJob()), now: T0 });
      expect(await claim(store, { limit: 3 })).toHaveLength(3);
      expect(await claim(store, { limit: 3 })).toHaveLength(2);
    });

    it('claims only the given tasks in the given queues', async () => {
      const { store } = await h.setup();
      const a = await insert(store, { task: 'a', queue: 'q1' });
      const b = await insert(store, { task: 'b', queue: 'q1' });
      const c = await insert(store, { task: 'a', queue: 'q2' });
      await insert(store, { task: 'c', queue: 'q3' });
      expect(await claim(store, { tasks: ['a'], queues: ['q3'] })).toEqual([]);
      expect(await claim(store, { tasks: ['zzz'], queues: ['q1', 'q2'] })).toEqual([]);
      expect((await claim(store, { tasks: ['a'], queues: ['q1'] })).map((j) => j.id)).toEqual([a.id]);
      expect((await claim(store, { tasks: ['a', 'b'], queues: ['q1', 'q2'] })).map((j) => j.id)).toEqual([b.id, c.id]);
      expect(await claim(store, { tasks: [], queues: [] })).toEqual([]);
    });

    it('a job is claimable from its runAt on, not before', async () => {
      const { store } = await h.setup();
      const later = await insert(store, { runAt: T0 + 5000 });
      expect(await claim(store, { now: T0 + 4999 })).toEqual([]);
      expect((await claim(store, { now: T0 + 5000 })).map((j) => j.id)).toEqual([later.id]);
    });

    it('a claim sets running, attempt + 1, the lease (owner, expiry, a new token) and startedAt', async () => {
      const { store } = await h.setup();
      const job = await insert(store);
      const claimed = await claimOne(store, { workerId: 'w-9', leaseMs: 12_345, now: T0 + 7 });
      expect(claimed).toMatchObject({ id: job.id, state: 'running', attempt: 1, leaseOwner: 'w-9' });
      expect(ms(claimed.leaseExpiresAt)).toBe(T0 + 7 + 12_345);
      expect(ms(claimed.startedAt)).toBe(T0 + 7);
      expect(Number.isInteger(claimed.leaseToken)).toBe(true);
      const { leaseToken, ...stored } = claimed;
      expect(await get(store, job.id)).toEqual(stored);

      // Claimed again after a release: attempt counts again from the released value, token changes.
      expect(await store.jobRelease({ leases: [{ id: job.id, token: leaseToken }], now: T0 + 10 })).toEqual([job.id]);
      const again = await claimOne(store, { workerId: 'w-10', now: T0 + 10 });
      expect(again.attempt).toBe(1);
      expect(again.leaseToken).not.toBe(leaseToken);
    });

    it('two store instances claiming at once never take the same job', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      await store.jobInsertMany({ jobs: Array.from({ length: 30 }, () => newJob()), now: T0 });
      const rounds = await Promise.all([
        claim(store, { workerId: 'one', limit: 10 }),
        claim(other, { workerId: 'two', limit: 10 }),
        claim(store, { workerId: 'three', limit: 10 }),
        claim(other, { workerId: 'four', limit: 10 }),
      ]);
      const ids = rounds.flat().map((j) => j.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBe(30);
    });
  });

  describe('jobCancel', () => {
    it('queued → cancelled at once, with the time and reason', async () => {
      const { store } = await h.setup();
      const job = await insert(store);
      const answer = await store.jobCancel({ id: job.id, reason: 'no longer needed', now: T0 + 5 });
      expect(answer?.outcome).toBe('cancelled');
      expect(answer?.job).toMatchObject({ id: job.id, state: 'cancelled', cancelReason: 'no longer needed' });
      expect(ms(answer!.job.cancelRequestedAt)).toBe(T0 + 5);
      expect(ms(answer!.job.finishedAt)).toBe(T0 + 5);
      expect(await get(store, job.id)).toEqual(answer!.job);
      expect(await claim(store, { now: T0 + 10 })).toEqual([]);
    });

    it('running → the request is stored (requested); the job keeps running; a repeated request keeps the first time and reason', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      const first = await store.jobCancel({ id: job.id, reason: 'first', now: T0 + 5 });
      expect(first?.outcome).toBe('requested');
      expect(first?.job).toMatchObject({ state: 'running', cancelReason: 'first', leaseOwner: 'w1', finishedAt: null });
      expect(ms(first!.job.cancelRequestedAt)).toBe(T0 + 5);
      const second = await store.jobCancel({ id: job.id, reason: 'second', now: T0 + 9 });
      expect(second?.outcome).toBe('requested');
      expect(second?.job).toEqual(first?.job);
      expect(await store.jobCancelRequests({ ids: [job.id] })).toEqual([{ id: job.id, reason: 'first' }]);
    });

    it('a running job without a reason: the request is stored with reason null', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      expect((await store.jobCancel({ id: job.id, reason: null, now: T0 + 1 }))?.job).toMatchObject({ cancelReason: null, state: 'running' });
      expect(await store.jobCancelRequests({ ids: [job.id] })).toEqual([{ id: job.id, reason: null }]);
    });

    it('completed, failed and cancelled jobs are unchanged; a repeated cancel of a cancelled job keeps the first time', async () => {
      const { store } = await h.setup();
      const done = await running(store, { task: 'done' });
      await store.jobCompleteMany({ items: [{ id: done.id, token: done.leaseToken, result: '"ok"' }], now: T0 + 1 });
      const failed = await running(store, { task: 'failed' });
      await store.jobFail({ id: failed.id, token: failed.leaseToken, error: { attempt: 1, time: T0 + 1, message: 'boom', stack: null }, retryAt: null, now: T0 + 1 });
      const cancelled = await insert(store, { task: 'cancelled' });
      await store.jobCancel({ id: cancelled.id, reason: 'first', now: T0 + 1 });

      for (const id of [done.id, failed.id, cancelled.id]) {
        const before = await get(store, id);
        const answer = await store.jobCancel({ id, reason: 'again', now: T0 + 50 });
        expect(answer, `job ${id} (${before.state})`).toEqual({ job: before, outcome: 'unchanged' });
        expect(await get(store, id)).toEqual(before);
      }
      expect((await get(store, cancelled.id)).cancelReason).toBe('first');
      expect(ms((await get(store, cancelled.id)).cancelRequestedAt)).toBe(T0 + 1);
    });

    it('an unknown id → null', async () => {
      const { store } = await h.setup();
      expect(await store.jobCancel({ id: 987_654, reason: null, now: T0 })).toBeNull();
    });
  });

  describe('jobCancelRequests', () => {
    it('lists only the given running jobs that have a cancel request', async () => {
      const { store } = await h.setup();
      const asked = await running(store, { task: 'a' });
      const quiet = await running(store, { task: 'b' });
      const queued = await insert(store, { task: 'c' });
      await store.jobCancel({ id: asked.id, reason: 'r', now: T0 + 1 });
      await store.jobCancel({ id: queued.id, reason: 'q', now: T0 + 1 }); // now cancelled, not running
      expect(await store.jobCancelRequests({ ids: [asked.id, quiet.id, queued.id, 999_999] })).toEqual([{ id: asked.id, reason: 'r' }]);
      expect(await store.jobCancelRequests({ ids: [quiet.id] })).toEqual([]);
      expect(await store.jobCancelRequests({ ids: [] })).toEqual([]);
    });
  });

  describe('jobRetry', () => {
    const failedJob = async (store: Store, key: string | null = null) => {
      const job = await running(store, { key, maxAttempts: 1 });
      await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: 1, time: T0 + 1, message: 'boom', stack: 'at x' }, retryAt: null, now: T0 + 1 });
      return get(store, job.id);
    };

    it('failed → queued at now, attempt 0, errors kept, finish cleared', async () => {
      const { store } = await h.setup();
      const failed = await failedJob(store);
      expect(failed).toMatchObject({ state: 'failed', attempt: 1 });
      const answer = await store.jobRetry({ id: failed.id, now: T0 + 100 });
      expect(answer?.retried).toBe(true);
      expect(answer?.job).toMatchObject({ state: 'queued', attempt: 0, result: null, finishedAt: null, cancelRequestedAt: null, cancelReason: null, leaseOwner: null, leaseExpiresAt: null });
      expect(answer?.job.errors).toEqual(failed.errors);
      expect(answer?.job.errors).toHaveLength(1);
      expect(ms(answer!.job.runAt)).toBe(T0 + 100);
      expect(await get(store, failed.id)).toEqual(answer!.job);
      expect((await claim(store, { now: T0 + 100 })).map((j) => j.id)).toEqual([failed.id]);
    });

    it('cancelled → queued, the cancel request cleared', async () => {
      const { store } = await h.setup();
      const job = await insert(store);
      await store.jobCancel({ id: job.id, reason: 'oops', now: T0 + 1 });
      const answer = await store.jobRetry({ id: job.id, now: T0 + 2 });
      expect(answer?.retried).toBe(true);
      expect(answer?.job).toMatchObject({ state: 'queued', attempt: 0, cancelRequestedAt: null, cancelReason: null, finishedAt: null });
    });

    it('queued, running and completed jobs are unchanged (retried: false)', async () => {
      const { store } = await h.setup();
      const queued = await insert(store, { task: 'q' });
      const run = await running(store, { task: 'r' });
      const done = await running(store, { task: 'd' });
      await store.jobCompleteMany({ items: [{ id: done.id, token: done.leaseToken, result: '42' }], now: T0 + 1 });
      for (const id of [queued.id, run.id, done.id]) {
        const before = await get(store, id);
        expect(await store.jobRetry({ id, now: T0 + 50 }), `${before.state}`).toEqual({ job: before, retried: false });
        expect(await get(store, id)).toEqual(before);
      }
    });

    it('a key now held by another live job → ConflictError, the job unchanged', async () => {
      const { store } = await h.setup();
      const failed = await failedJob(store, 'shared');
      const successor = await insert(store, { key: 'shared' }, T0 + 2);
      expect(successor.id).not.toBe(failed.id);
      const error = await store.jobRetry({ id: failed.id, now: T0 + 3 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConflictError);
      expect(await get(store, failed.id)).toEqual(failed);
    });

    it('an unknown id → null', async () => {
      const { store } = await h.setup();
      expect(await store.jobRetry({ id: 987_654, now: T0 })).toBeNull();
    });
  });

  describe('jobGet, jobList', () => {
    it('jobGet of an unknown id → null', async () => {
      const { store } = await h.setup();
      expect(await store.jobGet({ id: 1 })).toBeNull();
    });

    it('jobList: newest first, filtered by state, queue and task, paged by the beforeId cursor', async () => {
      const { store } = await h.setup();
      const spec = [
        { queue: 'q1', task: 'a' },
        { queue: 'q2', task: 'a' },
        { queue: 'q1', task: 'b' },
        { queue: 'q1', task: 'a' },
        { queue: 'q2', task: 'b' },
        { queue: 'q1', task: 'a' },
      ];
      const ids = (await store.jobInsertMany({ jobs: spec.map((s) => newJob(s)), now: T0 })).map((i) => i.job.id);
      const cancelled = ids[3]!;
      await store.jobCancel({ id: cancelled, reason: null, now: T0 });
      const desc = [...ids].reverse();
      const list = async (params: Parameters<Store['jobList']>[0]) => (await store.jobList(params)).map((j) => j.id);

      expect(await list({ limit: 100 })).toEqual(desc);
      expect(await list({ limit: 2 })).toEqual(desc.slice(0, 2));
      expect(await list({ limit: 100, queue: 'q1' })).toEqual(desc.filter((id) => spec[ids.indexOf(id)]!.queue === 'q1'));
      expect(await list({ limit: 100, task: 'b' })).toEqual(desc.filter((id) => spec[ids.indexOf(id)]!.task === 'b'));
      expect(await list({ limit: 100, state: 'cancelled' })).toEqual([cancelled]);
      expect(await list({ limit: 100, state: 'queued', queue: 'q1', task: 'a' })).toEqual([ids[5], ids[0]]);
      expect(await list({ limit: 100, state: 'completed' })).toEqual([]);

      // Paging with the cursor visits every job once, newest first.
      const paged: number[] = [];
      for (let beforeId: number | undefined; ; ) {
        const page = await list({ limit: 4, ...(beforeId === undefined ? {} : { beforeId }) });
        paged.push(...page);
        if (page.length < 4) break;
        beforeId = page.at(-1);
      }
      expect(paged).toEqual(desc);
      expect(await list({ limit: 100, beforeId: ids[2]! })).toEqual([ids[1], ids[0]]);
      expect(await list({ limit: 100, beforeId: ids[0]! })).toEqual([]);
    });
  });

  describe('queueCounts, queueThroughput', () => {
    it('queueCounts: jobs per queue and state, narrowed by a queue prefix', async () => {
      const { store } = await h.setup();
      await store.jobInsertMany({ jobs: [newJob({ queue: 'mail' }), newJob({ queue: 'mail' }), newJob({ queue: 'mail-bulk' }), newJob({ queue: 'video' })], now: T0 });
      await claimOne(store, { queues: ['video'] });
      const sorted = (rows: Awaited<ReturnType<Store['queueCounts']>>) =>
        [...rows].sort((a, b) => a.queue.localeCompare(b.queue) || a.state.localeCompare(b.state));
      expect(sorted(await store.queueCounts({}))).toEqual([
        { queue: 'mail', state: 'queued', count: 2 },
        { queue: 'mail-bulk', state: 'queued', count: 1 },
        { queue: 'video', state: 'running', count: 1 },
      ]);
      expect(sorted(await store.queueCounts({ queuePrefix: 'mail' }))).toEqual([
        { queue: 'mail', state: 'queued', count: 2 },
        { queue: 'mail-bulk', state: 'queued', count: 1 },
      ]);
      expect(await store.queueCounts({ queuePrefix: 'nothing' })).toEqual([]);
      // A prefix is a prefix, not a pattern.
      expect(await store.queueCounts({ queuePrefix: 'm%' })).toEqual([]);
      expect(await store.queueCounts({ queuePrefix: 'mai_' })).toEqual([]);
    });

    it('queueThroughput: completed and failed jobs per queue and minute since `since`, oldest first', async () => {
      const { store } = await h.setup();
      const finish = async (queue: string, outcome: 'completed' | 'failed' | 'cancelled', at: number) => {
        const job = await running(store, { queue, maxAttempts: 1, runAt: at - 1 }, { now: at - 1 });
        if (outcome === 'completed') await store.jobCompleteMany({ items: [{ id: job.id, token: job.leaseToken, result: 'null' }], now: at });
        else if (outcome === 'failed') await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: 1, time: at, message: 'x', stack: null }, retryAt: null, now: at });
        else {
          await store.jobCancel({ id: job.id, reason: null, now: at });
          await store.jobFinishCancelled({ id: job.id, token: job.leaseToken, now: at });
        }
      };
      const minute = 60_000;
      await finish('a', 'completed', T0 - 1); // before `since`
      await finish('a', 'completed', T0 + 5);
      await finish('a', 'completed', T0 + minute - 1);
      await finish('a', 'failed', T0 + 30_000);
      await finish('b', 'completed', T0 + 10);
      await finish('a', 'completed', T0 + minute);
      await finish('a', 'cancelled', T0 + minute + 1); // not counted
      expect(await store.queueThroughput({ since: T0 })).toEqual([
        { queue: 'a', minute: T0, completed: 2, failed: 1 },
        { queue: 'b', minute: T0, completed: 1, failed: 0 },
        { queue: 'a', minute: T0 + minute, completed: 1, failed: 0 },
      ]);
      expect(await store.queueThroughput({ since: T0 + 2 * minute })).toEqual([]);
    });
  });
}
