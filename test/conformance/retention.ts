import { describe, expect, it } from 'vitest';
import { ConfigError } from 'baton-jobs';
import type { Job } from '../../src/job/types.js';
import type { FinishedState, NewJob, Store } from '../../src/store/store.js';
import { get, insert, running, T0, type Harness } from './harness.js';

/** A job of `state` finished at `at` (completed, failed for good, or cancelled while queued). */
export async function finished(store: Store, state: FinishedState, at: number, overrides: Partial<NewJob> = {}): Promise<Job> {
  if (state === 'cancelled') {
    const job = await insert(store, overrides);
    await store.jobCancel({ id: job.id, reason: null, now: at });
    return get(store, job.id);
  }
  const job = await running(store, overrides);
  if (state === 'completed') await store.jobCompleteMany({ items: [{ id: job.id, token: job.leaseToken, result: '1' }], now: at });
  else await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: 1, time: at, message: 'x', stack: null }, retryAt: null, now: at });
  return get(store, job.id);
}

/** Ids of every job left, ascending. */
async function ids(store: Store): Promise<number[]> {
  return (await store.jobList({ limit: 1000 })).map((j) => j.id).sort((a, b) => a - b);
}

/** Queued and running jobs that no delete may touch: a queued one, a running one, a running one with a cancel request, one waiting for a retry. */
async function liveJobs(store: Store): Promise<Job[]> {
  const queued = await insert(store, { task: 'live' });
  const run = await running(store, { task: 'live-run' });
  const cancelling = await running(store, { task: 'live-cancelling' });
  await store.jobCancel({ id: cancelling.id, reason: null, now: T0 });
  const retrying = await running(store, { task: 'live-retry' });
  await store.jobFail({ id: retrying.id, token: retrying.leaseToken, error: { attempt: 1, time: T0, message: 'x', stack: null }, retryAt: T0 + 60_000, now: T0 });
  return Promise.all([queued, run, cancelling, retrying].map((j) => get(store, j.id)));
}

/** Deleting finished jobs: retention (the pruner) and purges. */
export function retentionTests(h: Harness): void {
  describe('jobDeleteFinished', () => {
    it('deletes finished jobs of the given states finished before the cutoff, oldest first, at most `limit` per call; queued and running jobs are never touched', async () => {
      const { store } = await h.setup();
      const live = await liveJobs(store);
      const c1 = await finished(store, 'completed', T0 + 30);
      const c2 = await finished(store, 'completed', T0 + 10);
      const c3 = await finished(store, 'completed', T0 + 20);
      const failed = await finished(store, 'failed', T0 + 5);
      const cancelled = await finished(store, 'cancelled', T0 + 5);
      const late = await finished(store, 'completed', T0 + 1000);

      expect(await store.jobDeleteFinished({ states: ['completed'], finishedBefore: T0 + 100, limit: 2 })).toBe(2);
      expect(await ids(store)).toEqual([...live.map((j) => j.id), c1.id, failed.id, cancelled.id, late.id].sort((a, b) => a - b));
      expect(c2.id).toBeLessThan(c3.id); // c2 and c3 went (finished first), c1 stays
      expect(await store.jobDeleteFinished({ states: ['completed'], finishedBefore: T0 + 100, limit: 2 })).toBe(1);
      expect(await store.jobDeleteFinished({ states: ['completed'], finishedBefore: T0 + 100, limit: 2 })).toBe(0);
      for (const job of live) expect(await get(store, job.id)).toEqual(job);
      expect(await ids(store)).toEqual([...live.map((j) => j.id), failed.id, cancelled.id, late.id].sort((a, b) => a - b));
    });

    it('finishedBefore is exclusive: a job finished at the cutoff is kept, one finished 1 ms earlier is deleted', async () => {
      const { store } = await h.setup();
      const cutoff = T0 + 86_400_000;
      const before = await finished(store, 'completed', cutoff - 1);
      const at = await finished(store, 'completed', cutoff);
      const after = await finished(store, 'completed', cutoff + 1);
      expect(await store.jobDeleteFinished({ states: ['completed'], finishedBefore: cutoff, limit: 100 })).toBe(1);
      expect(await ids(store)).toEqual([at.id, after.id]);
      expect(before.id).toBeLessThan(at.id);
    });

    it('several states in one call: the oldest across them first; without finishedBefore every finished job matches', async () => {
      const { store } = await h.setup();
      const live = await liveJobs(store);
      const f = await finished(store, 'failed', T0 + 3);
      const c = await finished(store, 'completed', T0 + 1);
      const x = await finished(store, 'cancelled', T0 + 2);
      const d = await finished(store, 'completed', T0 + 4);
      expect(await store.jobDeleteFinished({ states: ['completed', 'failed', 'cancelled'], limit: 2 })).toBe(2);
      expect(await ids(store)).toEqual([...live.map((j) => j.id), f.id, d.id].sort((a, b) => a - b));
      expect([c.id, x.id]).not.toContain(f.id);
      expect(await store.jobDeleteFinished({ states: ['failed', 'completed', 'completed'], limit: 100 })).toBe(2);
      expect(await ids(store)).toEqual(live.map((j) => j.id).sort((a, b) => a - b));
      expect(await store.jobDeleteFinished({ states: [], limit: 100 })).toBe(0);
    });

    it('queue, task and the except lists narrow the match', async () => {
      const { store } = await h.setup();
      const a1 = await finished(store, 'completed', T0, { queue: 'a', task: 't1' });
      const a2 = await finished(store, 'completed', T0, { queue: 'a', task: 't2' });
      const b1 = await finished(store, 'completed', T0, { queue: 'b', task: 't1' });
      const b2 = await finished(store, 'completed', T0, { queue: 'b', task: 't2' });
      const c1 = await finished(store, 'completed', T0, { queue: 'c', task: 't1' });
      const all = [a1, a2, b1, b2, c1].map((j) => j.id);
      const left = async () => (await ids(store)).map((id) => all.indexOf(id));

      expect(await store.jobDeleteFinished({ states: ['completed'], queue: 'a', task: 't2', limit: 10 })).toBe(1);
      expect(await left()).toEqual([0, 2, 3, 4]);
      expect(await store.jobDeleteFinished({ states: ['completed'], exceptQueues: ['b'], exceptTasks: ['t2'], finishedBefore: T0 + 1, limit: 10 })).toBe(2);
      expect(await left()).toEqual([2, 3]);
      expect(await store.jobDeleteFinished({ states: ['completed'], task: 't1', exceptQueues: ['c'], limit: 10 })).toBe(1);
      expect(await left()).toEqual([3]);
      expect(await store.jobDeleteFinished({ states: ['failed', 'cancelled'], limit: 10 })).toBe(0);
      expect(await store.jobDeleteFinished({ states: ['completed'], queue: 'nope', limit: 10 })).toBe(0);
      expect(await left()).toEqual([3]);
    });

    it('a failed job retried back to queued is no longer finished and is not deleted', async () => {
      const { store } = await h.setup();
      const job = await finished(store, 'failed', T0);
      await store.jobRetry({ id: job.id, now: T0 + 1 });
      expect(await store.jobDeleteFinished({ states: ['failed'], limit: 10 })).toBe(0);
      expect((await get(store, job.id)).state).toBe('queued');
    });
  });

  it('a limit outside 1..10000 or a keep outside 0..1000000 is refused with a ConfigError naming it, before anything is deleted', async () => {
    const { store } = await h.setup();
    const job = await finished(store, 'completed', T0);
    for (const limit of [0, -1, 1.5, 10_001, Number.NaN]) {
      await expect(store.jobDeleteFinished({ states: ['completed'], limit })).rejects.toThrow(ConfigError);
      await expect(store.jobDeleteFinished({ states: ['completed'], limit })).rejects.toThrow(/jobDeleteFinished: limit must be an integer from 1 to 10000/);
      await expect(store.jobDeleteFinishedBeyond({ queue: 'default', keep: 0, limit })).rejects.toThrow(/jobDeleteFinishedBeyond: limit/);
    }
    for (const keep of [-1, 0.5, 1_000_001]) {
      await expect(store.jobDeleteFinishedBeyond({ queue: 'default', keep, limit: 10 })).rejects.toThrow(/jobDeleteFinishedBeyond: keep must be an integer from 0 to 1000000/);
    }
    expect(await ids(store)).toEqual([job.id]);
  });

  describe('jobDeleteFinishedBeyond', () => {
    it('keeps the newest `keep` finished jobs of the queue (every finished state counts) and deletes the rest oldest first, at most `limit` per call', async () => {
      const { store } = await h.setup();
      const live = await liveJobs(store);
      const other = await finished(store, 'completed', T0, { queue: 'other' });
      const states: FinishedState[] = ['completed', 'failed', 'cancelled', 'completed', 'failed', 'completed'];
      const jobs: Job[] = [];
      // Finished in reverse id order for the first three, so finished_at (not id) decides.
      for (const [i, state] of states.entries()) jobs.push(await finished(store, state, T0 + (i < 3 ? 30 - i * 10 : 100 + i)));
      // Newest first by finished_at: jobs 5, 4, 3, then 0 (T0+30), 1, 2 (T0+10).
      expect(await store.jobDeleteFinishedBeyond({ queue: 'default', keep: 3, limit: 2 })).toBe(2);
      expect(await ids(store)).toEqual([...live.map((j) => j.id), other.id, jobs[0]!.id, jobs[3]!.id, jobs[4]!.id, jobs[5]!.id].sort((a, b) => a - b));
      expect(await store.jobDeleteFinishedBeyond({ queue: 'default', keep: 3, limit: 2 })).toBe(1);
      expect(await store.jobDeleteFinishedBeyond({ queue: 'default', keep: 3, limit: 2 })).toBe(0);
      expect(await ids(store)).toEqual([...live.map((j) => j.id), other.id, jobs[3]!.id, jobs[4]!.id, jobs[5]!.id].sort((a, b) => a - b));
      for (const job of live) expect(await get(store, job.id)).toEqual(job);
    });

    it('a tie on finished_at is broken by id (the higher id is newer); keep 0 deletes every finished job of the queue; fewer than keep deletes nothing', async () => {
      const { store } = await h.setup();
      const live = await liveJobs(store);
      const a = await finished(store, 'completed', T0);
      const b = await finished(store, 'completed', T0);
      expect(await store.jobDeleteFinishedBeyond({ queue: 'default', keep: 5, limit: 10 })).toBe(0);
      expect(await store.jobDeleteFinishedBeyond({ queue: 'default', keep: 1, limit: 10 })).toBe(1);
      expect(await ids(store)).toEqual([...live.map((j) => j.id), b.id].sort((x, y) => x - y));
      expect(a.id).toBeLessThan(b.id);
      expect(await store.jobDeleteFinishedBeyond({ queue: 'default', keep: 0, limit: 10 })).toBe(1);
      expect(await ids(store)).toEqual(live.map((j) => j.id).sort((x, y) => x - y));
      expect(await store.jobDeleteFinishedBeyond({ queue: 'empty', keep: 0, limit: 10 })).toBe(0);
    });
  });
}
