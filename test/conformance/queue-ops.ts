import { describe, expect, it } from 'vitest';
import type { Job, JobState } from '../../src/job/types.js';
import type { FinishedState, JobBulkFilter, Store } from '../../src/store/store.js';
import { claim, get, insert, ms, running, T0, type Harness } from './harness.js';
import { recorder, writeUntilCalled } from './workers.js';

const FINISHED: FinishedState[] = ['completed', 'failed', 'cancelled'];
/** The priority of jobs left queued: claimed after every other (so later `running()` calls claim their own job). */
const LAST = 1000;

/**
 * One job in each state on queue `q` (task `t` unless told), finished ones at
 * `finishedAt`: queued (priority {@link LAST}), running, completed, failed (for good), cancelled.
 */
async function oneOfEach(store: Store, options: { queue?: string; task?: string; finishedAt?: number; createdAt?: number } = {}): Promise<Record<JobState, Job>> {
  const job = { queue: options.queue ?? 'q', task: options.task ?? 't', maxAttempts: 1 };
  const at = options.finishedAt ?? T0 + 10;
  const created = options.createdAt ?? T0;
  const completed = await running(store, job, { now: created });
  await store.jobCompleteMany({ items: [{ id: completed.id, token: completed.leaseToken, result: '1' }], now: at });
  const failed = await running(store, job, { now: created });
  await store.jobFail({ id: failed.id, token: failed.leaseToken, error: { attempt: 1, time: at, message: 'boom', stack: null }, retryAt: null, now: at });
  const cancelled = await insert(store, job, created);
  await store.jobCancel({ id: cancelled.id, reason: 'before', now: at });
  const run = await running(store, job, { now: created });
  const queued = await insert(store, { ...job, priority: LAST }, created);
  return {
    queued: await get(store, queued.id),
    running: await get(store, run.id),
    completed: await get(store, completed.id),
    failed: await get(store, failed.id),
    cancelled: await get(store, cancelled.id),
  };
}

const filter = (states: JobState[], rest: Omit<JobBulkFilter, 'states'> = {}): JobBulkFilter => ({ states, ...rest });

/** Paused queues, deleting a job, and the batches of bulk retry, cancel and purge. */
export function queueOpsTests(h: Harness): void {
  describe('queueSetPaused, queueListPaused', () => {
    it('a paused queue is skipped by every claim (other queues are not); resuming makes its jobs claimable again', async () => {
      const { store, another } = await h.setup();
      const mail = await insert(store, { queue: 'mail' });
      const other = await insert(store, { queue: 'default' });
      expect(await store.queueSetPaused({ name: 'mail', paused: true, now: T0 + 1 })).toBe(true);
      expect(await store.queueSetPaused({ name: 'mail', paused: true, now: T0 + 2 })).toBe(false); // already paused: the first time stays
      expect(await store.queueListPaused()).toEqual([{ queue: 'mail', pausedAt: T0 + 1 }]);

      // Another instance (another process) sees the pause: its claim skips the queue.
      const second = await another();
      expect((await claim(second, { queues: ['mail', 'default'], now: T0 + 5 })).map((j) => j.id)).toEqual([other.id]);
      expect(await claim(store, { queues: ['mail'], now: T0 + 5 })).toEqual([]);
      expect((await get(store, mail.id)).state).toBe('queued');

      expect(await store.queueSetPaused({ name: 'mail', paused: false, now: T0 + 6 })).toBe(true);
      expect(await store.queueSetPaused({ name: 'mail', paused: false, now: T0 + 7 })).toBe(false);
      expect(await store.queueListPaused()).toEqual([]);
      expect((await claim(second, { queues: ['mail'], now: T0 + 8 })).map((j) => j.id)).toEqual([mail.id]);
    });

    it('a running job of a queue paused meanwhile goes on: its completion is written', async () => {
      const { store } = await h.setup();
      const job = await running(store, { queue: 'mail' });
      await store.queueSetPaused({ name: 'mail', paused: true, now: T0 + 1 });
      expect((await store.jobCompleteMany({ items: [{ id: job.id, token: job.leaseToken, result: '1' }], now: T0 + 2 })).completed).toEqual([job.id]);
    });

    it('a queue paused before its first job: the job waits; resuming a queue never paused changes nothing', async () => {
      const { store } = await h.setup();
      expect(await store.queueSetPaused({ name: 'later', paused: true, now: T0 })).toBe(true);
      await insert(store, { queue: 'later' });
      expect(await claim(store, { queues: ['later'], now: T0 + 1 })).toEqual([]);
      expect(await store.queueSetPaused({ name: 'never', paused: false, now: T0 })).toBe(false);
      expect(await store.queueListPaused()).toEqual([{ queue: 'later', pausedAt: T0 }]);
    });

    it('resuming wakes another instance watching for changes', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      const seen = recorder();
      const stop = store.watchChanges({ intervalMs: 100, listener: seen.listener });
      try {
        // PostgreSQL: only the resume NOTIFYs (a pause needs no message); SQLite: any commit.
        await writeUntilCalled(seen.called, async (round) => {
          await other.queueSetPaused({ name: 'mail', paused: true, now: T0 + 2 * round });
          await other.queueSetPaused({ name: 'mail', paused: false, now: T0 + 2 * round + 1 });
        });
        expect(seen.calls.length).toBeGreaterThan(0);
      } finally {
        stop();
      }
    });
  });

  describe('queueKnown', () => {
    it('known: a job in any state (queued, running or finished), a live worker serving it, or a pause row', async () => {
      const { store } = await h.setup();
      expect(await store.queueKnown({ name: 'q', now: T0 })).toBe(false);
      const job = await insert(store, { queue: 'q' });
      expect(await store.queueKnown({ name: 'q', now: T0 })).toBe(true);
      await store.jobCancel({ id: job.id, reason: null, now: T0 });
      expect(await store.queueKnown({ name: 'q', now: T0 })).toBe(true); // finished only: still listed by queueCounts
      await store.jobDelete({ id: job.id });
      expect(await store.queueKnown({ name: 'q', now: T0 })).toBe(false);
      await running(store, { queue: 'r' });
      expect(await store.queueKnown({ name: 'r', now: T0 })).toBe(true);

      await store.workerUpsert({ worker: { id: 'w', host: 'h', pid: 1, startedAt: T0, concurrency: 1, queues: ['served'], tasks: ['t'], running: [] }, ttlMs: 1000, now: T0 });
      expect(await store.queueKnown({ name: 'served', now: T0 + 999 })).toBe(true);
      expect(await store.queueKnown({ name: 'served', now: T0 + 1000 })).toBe(false); // its registration expired

      await store.queueSetPaused({ name: 'p', paused: true, now: T0 });
      await store.queueSetPaused({ name: 'p', paused: false, now: T0 });
      expect(await store.queueKnown({ name: 'p', now: T0 })).toBe(true);
    });
  });

  describe('jobDelete', () => {
    it('deletes a queued, completed, failed or cancelled job; refuses a running one; null for an unknown id', async () => {
      const { store } = await h.setup();
      const jobs = await oneOfEach(store);
      for (const state of ['queued', 'completed', 'failed', 'cancelled'] as const) {
        expect(await store.jobDelete({ id: jobs[state].id }), state).toEqual({ state, deleted: true });
        expect(await store.jobGet({ id: jobs[state].id })).toBeNull();
      }
      expect(await store.jobDelete({ id: jobs.running.id })).toEqual({ state: 'running', deleted: false });
      expect(await get(store, jobs.running.id)).toEqual(jobs.running);
      expect(await store.jobDelete({ id: jobs.queued.id })).toBeNull();
      expect(await store.jobDelete({ id: 987_654 })).toBeNull();
    });
  });

  describe('jobCount, jobSelectIds', () => {
    it('match every given field (states, queue, task, createdBefore, finishedBefore: strictly before); ids ascending, paged by afterId', async () => {
      const { store } = await h.setup();
      const a = await oneOfEach(store, { queue: 'a', createdAt: T0, finishedAt: T0 + 100 });
      const b = await oneOfEach(store, { queue: 'b', task: 'u', createdAt: T0 + 50, finishedAt: T0 + 200 });
      const ids = (jobs: Job[]) => jobs.map((j) => j.id).sort((x, y) => x - y);

      expect(await store.jobCount(filter(['failed']))).toBe(2);
      expect(await store.jobCount(filter(['failed', 'cancelled'], { queue: 'a' }))).toBe(2);
      expect(await store.jobCount(filter(['queued', 'running'], { task: 'u' }))).toBe(2);
      expect(await store.jobCount(filter(['queued'], { queue: 'nope' }))).toBe(0);
      expect(await store.jobCount(filter(['queued', 'running', ...FINISHED], { createdBefore: T0 + 50 }))).toBe(5);
      expect(await store.jobCount(filter(FINISHED, { finishedBefore: T0 + 200 }))).toBe(3);
      expect(await store.jobCount(filter(FINISHED, { finishedBefore: T0 + 201 }))).toBe(6);
      expect(await store.jobCount(filter(['queued'], { finishedBefore: T0 + 1000 }))).toBe(0); // not finished

      const all = filter(['queued', 'running', ...FINISHED]);
      const expected = ids([...Object.values(a), ...Object.values(b)]);
      expect(await store.jobSelectIds({ ...all, afterId: 0, limit: 100 })).toEqual(expected);
      const first = await store.jobSelectIds({ ...all, afterId: 0, limit: 4 });
      expect(first).toEqual(expected.slice(0, 4));
      expect(await store.jobSelectIds({ ...all, afterId: first.at(-1)!, limit: 4 })).toEqual(expected.slice(4, 8));
      expect(await store.jobSelectIds({ ...filter(['failed', 'cancelled'], { queue: 'b' }), afterId: 0, limit: 10 })).toEqual(ids([b.failed, b.cancelled]));
    });
  });

  describe('jobRetryMany', () => {
    it('failed and cancelled → queued now, attempt 0, errors kept; other states and unknown ids left out', async () => {
      const { store } = await h.setup();
      const jobs = await oneOfEach(store);
      const retried = await store.jobRetryMany({ ids: [...Object.values(jobs).map((j) => j.id), 987_654], now: T0 + 500 });
      expect(retried).toEqual([jobs.failed.id, jobs.cancelled.id].sort((x, y) => x - y));
      for (const state of ['failed', 'cancelled'] as const) {
        const job = await get(store, jobs[state].id);
        expect(job).toMatchObject({ state: 'queued', attempt: 0, startedAt: null, finishedAt: null, cancelRequestedAt: null, cancelReason: null, result: null });
        expect(ms(job.runAt)).toBe(T0 + 500);
        expect(job.errors).toEqual(jobs[state].errors);
      }
      for (const state of ['queued', 'running', 'completed'] as const) expect(await get(store, jobs[state].id)).toEqual(jobs[state]);
      expect(await store.jobRetryMany({ ids: [], now: T0 })).toEqual([]);
    });

    it('keeps checkpoint and progress; with fresh clears them, as jobRetry does', async () => {
      const { store } = await h.setup();
      const failedWithCheckpoint = async (task: string) => {
        const job = await running(store, { task, maxAttempts: 1 });
        await store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: '{"page":3}' });
        await store.jobProgress({ id: job.id, token: job.leaseToken, progress: { current: 3 } });
        await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: 1, time: T0 + 1, message: 'x', stack: null }, retryAt: null, now: T0 + 1 });
        return job.id;
      };
      const kept = await failedWithCheckpoint('kept');
      const fresh = [await failedWithCheckpoint('fresh1'), await failedWithCheckpoint('fresh2')];
      expect(await store.jobRetryMany({ ids: [kept], now: T0 + 10 })).toEqual([kept]);
      expect(await store.jobRetryMany({ ids: fresh, now: T0 + 10, fresh: true })).toEqual(fresh);
      expect(await get(store, kept)).toMatchObject({ state: 'queued', checkpoint: { page: 3 }, progress: { current: 3 } });
      for (const id of fresh) {
        expect(await get(store, id)).toMatchObject({ state: 'queued', attempt: 0, checkpoint: null, progress: null });
        expect((await store.jobTimeline({ id }))!.events.at(-1)).toMatchObject({ type: 'retried', fresh: true });
      }
    });

    it('keyed jobs: a key held by a queued or running job is skipped; two of the batch with one key → only the newest', async () => {
      const { store } = await h.setup();
      const failWith = async (key: string) => {
        const job = await running(store, { key, maxAttempts: 1 });
        await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: 1, time: T0, message: 'x', stack: null }, retryAt: null, now: T0 });
        return job.id;
      };
      const held = await failWith('held');
      await insert(store, { key: 'held', priority: LAST }); // a live job holds "held" now
      const older = await failWith('twice');
      const newer = await failWith('twice');
      const free = await failWith('free');
      expect(await store.jobRetryMany({ ids: [held, older, newer, free], now: T0 + 1 })).toEqual([newer, free]);
      expect((await get(store, held)).state).toBe('failed');
      expect((await get(store, older)).state).toBe('failed');
    });
  });

  describe('jobCancelMany', () => {
    it('queued → cancelled now; running → cancel request (first reason kept); finished jobs and unknown ids left out', async () => {
      const { store } = await h.setup();
      const jobs = await oneOfEach(store);
      await store.jobCancel({ id: jobs.running.id, reason: 'first', now: T0 + 20 });
      const report = await store.jobCancelMany({ ids: [...Object.values(jobs).map((j) => j.id), 987_654], reason: 'bulk', now: T0 + 30 });
      expect(report).toEqual({ cancelled: [jobs.queued.id], requested: [jobs.running.id] });
      expect(await get(store, jobs.queued.id)).toMatchObject({ state: 'cancelled', cancelReason: 'bulk' });
      expect(ms((await get(store, jobs.queued.id)).finishedAt)).toBe(T0 + 30);
      expect(await get(store, jobs.running.id)).toMatchObject({ state: 'running', cancelReason: 'first' });
      expect(await store.jobCancelRequests({ ids: [jobs.running.id] })).toEqual([{ id: jobs.running.id, reason: 'first' }]);
      for (const state of FINISHED) expect(await get(store, jobs[state].id)).toEqual(jobs[state]);
    });

    it('a running job cancelled in bulk by another instance reaches the watching one as a single cancel does', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      const count = 200;
      for (let i = 0; i < count; i++) await running(store);
      const ids = (await store.jobSelectIds({ states: ['running'], afterId: 0, limit: count }));
      const seen = recorder();
      const stop = store.watchChanges({ intervalMs: 100, listener: seen.listener });
      try {
        await writeUntilCalled(seen.called, async (round) => {
          expect((await other.jobCancelMany({ ids: [ids[round]!], reason: `r${round}`, now: T0 + 1 })).requested).toEqual([ids[round]]);
        }, count);
        for (const change of seen.calls) if (change?.cancel) expect(ids).toContain(change.cancel.id);
      } finally {
        stop();
      }
    });
  });

  describe('jobDeleteFinished', () => {
    it('deletes up to `limit` finished jobs, oldest finished first; filters by states, queue, task, finished_at < finishedBefore; never queued or running', async () => {
      const { store } = await h.setup();
      const early = await oneOfEach(store, { finishedAt: T0 + 100 });
      const late = await oneOfEach(store, { finishedAt: T0 + 200 });
      const other = await oneOfEach(store, { queue: 'other', task: 'u', finishedAt: T0 + 50 });
      const exists = async (job: Job) => (await store.jobGet({ id: job.id })) !== null;

      expect(await store.jobDeleteFinished({ states: FINISHED, queue: 'q', finishedBefore: T0 + 200, limit: 100 })).toBe(3);
      for (const state of FINISHED) expect(await exists(early[state])).toBe(false);
      for (const state of FINISHED) expect(await exists(late[state])).toBe(true); // finished at the cutoff: kept

      expect(await store.jobDeleteFinished({ states: ['failed'], task: 'u', limit: 100 })).toBe(1);
      expect(await exists(other.failed)).toBe(false);
      expect(await exists(other.completed)).toBe(true);

      // Oldest finished first, `limit` at a time.
      expect(await store.jobDeleteFinished({ states: FINISHED, limit: 2 })).toBe(2);
      expect(await exists(other.completed)).toBe(false);
      expect(await exists(other.cancelled)).toBe(false);
      expect(await store.jobDeleteFinished({ states: FINISHED, limit: 2 })).toBe(2);
      expect(await store.jobDeleteFinished({ states: FINISHED, limit: 2 })).toBe(1);
      expect(await store.jobDeleteFinished({ states: FINISHED, limit: 2 })).toBe(0);
      for (const jobs of [early, late, other]) for (const state of ['queued', 'running'] as const) expect(await get(store, jobs[state].id)).toEqual(jobs[state]);
    });
  });
}
