import { describe, expect, it } from 'vitest';
import { ConflictError } from 'baton-jobs';
import type { Store } from '../../src/store/store.js';
import { claim, claimOne, get, insert, ms, newJob, running, T0, type Harness } from './harness.js';
import { recorder, writeUntilCalled } from './workers.js';

/** What the client and the dashboard do to jobs: cancel, retry, read, count. */
export function jobAdminTests(h: Harness): void {
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

    it('among many running jobs, each requested one once (an id given twice included); a finished one no more', async () => {
      const { store } = await h.setup();
      await store.jobInsertMany({ jobs: Array.from({ length: 300 }, () => newJob()), now: T0 });
      const jobs = await claim(store, { limit: 300 });
      const [a, b, c] = [jobs[10]!, jobs[150]!, jobs[299]!];
      for (const job of [a, b, c]) await store.jobCancel({ id: job.id, reason: `r${job.id}`, now: T0 + 1 });
      expect(await store.jobFinishCancelled({ id: c.id, token: c.leaseToken, now: T0 + 2 })).toBe(true);
      const ids = jobs.map((j) => j.id);
      const found = await store.jobCancelRequests({ ids: [...ids, a.id] });
      expect(found.sort((x, y) => x.id - y.id)).toEqual([a, b].map((j) => ({ id: j.id, reason: `r${j.id}` })));
    });
  });

  describe('jobRetry', () => {
    const failedJob = async (store: Store, key: string | null = null) => {
      const job = await running(store, { key, maxAttempts: 1 });
      await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: 1, time: T0 + 1, message: 'boom', stack: 'at x' }, retryAt: null, now: T0 + 1 });
      return get(store, job.id);
    };

    it('failed → queued at now, attempt 0, errors kept, start and finish cleared', async () => {
      const { store } = await h.setup();
      const failed = await failedJob(store);
      expect(failed).toMatchObject({ state: 'failed', attempt: 1 });
      const answer = await store.jobRetry({ id: failed.id, now: T0 + 100 });
      expect(answer?.retried).toBe(true);
      expect(failed.startedAt).not.toBeNull();
      expect(answer?.job).toMatchObject({ state: 'queued', attempt: 0, result: null, startedAt: null, finishedAt: null, cancelRequestedAt: null, cancelReason: null, leaseOwner: null, leaseExpiresAt: null });
      expect(answer?.job.errors).toEqual(failed.errors);
      expect(answer?.job.errors).toHaveLength(1);
      expect(ms(answer!.job.runAt)).toBe(T0 + 100);
      expect(await get(store, failed.id)).toEqual(answer!.job);
      expect((await claim(store, { now: T0 + 100 })).map((j) => j.id)).toEqual([failed.id]);
    });

    it('checkpoint and progress are kept (the next run resumes); with fresh they are cleared, and the retried event says so', async () => {
      const { store } = await h.setup();
      const retriedWith = async (fresh: boolean | undefined, task: string) => {
        const job = await running(store, { task, maxAttempts: 1 });
        await store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: '{"step":41}' });
        await store.jobProgress({ id: job.id, token: job.leaseToken, progress: { current: 41, total: 60 } });
        await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: 1, time: T0 + 1, message: 'boom', stack: null }, retryAt: null, now: T0 + 1 });
        const answer = await store.jobRetry({ id: job.id, now: T0 + 100, ...(fresh === undefined ? {} : { fresh }) });
        expect(answer?.retried).toBe(true);
        expect(await get(store, job.id)).toEqual(answer!.job);
        expect((await store.jobTimeline({ id: job.id }))!.events.at(-1)).toMatchObject({ type: 'retried', fresh: fresh ?? false });
        return answer!.job;
      };
      expect(await retriedWith(undefined, 'kept')).toMatchObject({ state: 'queued', attempt: 0, checkpoint: { step: 41 }, progress: { current: 41, total: 60 } });
      expect(await retriedWith(false, 'kept2')).toMatchObject({ checkpoint: { step: 41 }, progress: { current: 41, total: 60 } });
      const fresh = await retriedWith(true, 'fresh');
      expect(fresh).toMatchObject({ state: 'queued', attempt: 0, checkpoint: null, progress: null, result: null });
      expect(fresh.errors).toHaveLength(1); // the history is kept either way
      expect((await claim(store, { tasks: ['fresh'], now: T0 + 100 }))[0]).toMatchObject({ id: fresh.id, checkpoint: null, attempt: 1 });
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

  describe('jobPromote', () => {
    it('a queued job due later (delayed, retrying, snoozed) → due now, ahead of the jobs of its priority due later; a promoted event with the runAt it had', async () => {
      const { store } = await h.setup();
      const due = await insert(store, { runAt: T0 - 1000 });
      const delayed = await insert(store, { runAt: T0 + 60_000 });
      const later = await insert(store, { runAt: T0 + 10 });
      const failing = await running(store, { task: 'retrying', maxAttempts: 3 });
      await store.jobFail({ id: failing.id, token: failing.leaseToken, error: { attempt: 1, time: T0, message: 'boom', stack: null }, retryAt: T0 + 90_000, now: T0 });
      const snoozing = await running(store, { task: 'snoozed' });
      await store.jobRelease({ leases: [{ id: snoozing.id, token: snoozing.leaseToken }], now: T0, runAt: T0 + 30_000, cause: 'snooze' });

      const answer = await store.jobPromote({ id: delayed.id, now: T0 + 5 });
      expect(answer?.promoted).toBe(true);
      expect(ms(answer!.job.runAt)).toBe(T0 + 5);
      expect(answer!.job).toMatchObject({ state: 'queued', attempt: 0 });
      expect(await get(store, delayed.id)).toEqual(answer!.job);
      expect((await store.jobTimeline({ id: delayed.id }))!.events).toEqual([{ type: 'promoted', at: T0 + 5, runAt: T0 + 60_000 }]);
      const order = [];
      for (let i = 0; i < 3; i++) order.push((await claimOne(store, { now: T0 + 20 + i })).id);
      expect(order).toEqual([due.id, delayed.id, later.id]);

      for (const [job, attempt] of [[failing, 1], [snoozing, 0]] as const) {
        const promoted = await store.jobPromote({ id: job.id, now: T0 + 30 });
        expect(promoted?.promoted).toBe(true);
        expect(promoted!.job).toMatchObject({ state: 'queued', attempt });
        expect(ms(promoted!.job.runAt)).toBe(T0 + 30);
        expect((await claimOne(store, { tasks: [job.task], now: T0 + 30 })).id).toBe(job.id);
      }
    });

    it('a job not waiting for a later time is unchanged: queued and due, running, completed, failed, cancelled; an unknown id → null', async () => {
      const { store } = await h.setup();
      const due = await insert(store, { task: 'due', runAt: T0 });
      const atNow = await insert(store, { task: 'atNow', runAt: T0 + 50 });
      const run = await running(store, { task: 'run' });
      const done = await running(store, { task: 'done' });
      await store.jobCompleteMany({ items: [{ id: done.id, token: done.leaseToken, result: '1' }], now: T0 + 1 });
      const failed = await running(store, { task: 'failed', maxAttempts: 1 });
      await store.jobFail({ id: failed.id, token: failed.leaseToken, error: { attempt: 1, time: T0 + 1, message: 'x', stack: null }, retryAt: null, now: T0 + 1 });
      const cancelled = await insert(store, { task: 'cancelled', runAt: T0 + 60_000 });
      await store.jobCancel({ id: cancelled.id, reason: null, now: T0 + 1 });
      for (const id of [due.id, atNow.id, run.id, done.id, failed.id, cancelled.id]) {
        const before = await get(store, id);
        expect(await store.jobPromote({ id, now: T0 + 50 }), before.task).toEqual({ job: before, promoted: false });
        expect(await get(store, id)).toEqual(before);
        expect((await store.jobTimeline({ id }))!.events.some((e) => e.type === 'promoted')).toBe(false);
      }
      expect(await store.jobPromote({ id: 987_654, now: T0 })).toBeNull();
    });

    it('a promotion wakes another instance watching for changes', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      const jobs = await other.jobInsertMany({ jobs: Array.from({ length: 200 }, () => newJob({ runAt: T0 + 60_000 })), now: T0 });
      const seen = recorder();
      const stop = store.watchChanges({ intervalMs: 100, listener: seen.listener });
      try {
        // PostgreSQL: the promotion NOTIFYs (no trigger fires on a runAt change); SQLite: any commit.
        await writeUntilCalled(seen.called, async (round) => {
          expect((await other.jobPromote({ id: jobs[round]!.job.id, now: T0 + round }))?.promoted).toBe(true);
        }, jobs.length);
        expect(seen.calls.length).toBeGreaterThan(0);
      } finally {
        stop();
      }
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
      await finish('a', 'cancelled', T0 + 2 * minute + 1); // not counted: no row for its minute
      expect(await store.queueThroughput({ since: T0 })).toEqual([
        { queue: 'a', minute: T0, completed: 2, failed: 1 },
        { queue: 'b', minute: T0, completed: 1, failed: 0 },
        { queue: 'a', minute: T0 + minute, completed: 1, failed: 0 },
      ]);
      expect(await store.queueThroughput({ since: T0 + 2 * minute })).toEqual([]);
    });
  });
}
