import { describe, expect, it } from 'vitest';
import { scheduleConcurrencyKey } from '../../src/job/concurrency.js';
import { jobTimeline } from '../../src/job/timeline.js';
import { LEASE_EXPIRED_MESSAGE } from '../../src/store/constants.js';
import type { JobTimelineRecord, Store } from '../../src/store/store.js';
import { claimOne, get, insert, newJob, running, T0, type Harness } from './harness.js';

/** Reads a job's stored timeline, which must exist. */
async function record(store: Store, id: number): Promise<JobTimelineRecord> {
  const found = await store.jobTimeline({ id });
  expect(found, `job ${id}`).not.toBeNull();
  return found!;
}

/** The built story as [type, ms, attempt, worker] rows. */
const story = (r: JobTimelineRecord) => jobTimeline(r).map((e) => [e.type, e.at.getTime(), e.attempt, e.worker]);

/** The stored timeline (migration 18): what each transition appends, in its own statement, and the story built from it. */
export function timelineTests(h: Harness): void {
  describe('jobTimeline', () => {
    it('a new job: the job as jobGet reads it, no events, token 0, no last worker; an unknown id → null', async () => {
      const { store } = await h.setup();
      const job = await insert(store);
      expect(await record(store, job.id)).toEqual({ job, events: [], leaseToken: 0, lastWorker: null });
      expect(await store.jobTimeline({ id: job.id + 1000 })).toBeNull();
      expect(story(await record(store, job.id))).toEqual([['enqueued', T0, null, null]]);
    });

    it('a release at shutdown and a snooze record the attempt they end; each later start is told from the row; the completion keeps its worker', async () => {
      const { store } = await h.setup();
      const a = await running(store, {}, { workerId: 'a' });
      expect(await store.jobRelease({ leases: [{ id: a.id, token: a.leaseToken }], now: T0 + 100 })).toEqual([a.id]);
      const b = await claimOne(store, { workerId: 'b', now: T0 + 200 });
      expect(await store.jobRelease({ leases: [{ id: b.id, token: b.leaseToken }], now: T0 + 300, runAt: T0 + 5300, cause: 'rateLimited' })).toEqual([b.id]);
      const c = await claimOne(store, { workerId: 'c', now: T0 + 5300 });
      expect(await store.jobRelease({ leases: [{ id: c.id, token: c.leaseToken }], now: T0 + 5310, runAt: T0 + 5320, cause: 'snooze' })).toEqual([c.id]);
      const d = await claimOne(store, { workerId: 'd', now: T0 + 5320 });
      expect((await store.jobCompleteMany({ items: [{ id: d.id, token: d.leaseToken, result: '1' }], now: T0 + 5400 })).completed).toEqual([d.id]);

      const r = await record(store, a.id);
      expect(r.events).toEqual([
        { type: 'released', at: T0 + 100, runAt: T0, attempt: 1, token: a.leaseToken, worker: 'a', startedAt: T0 },
        { type: 'snoozed', at: T0 + 300, runAt: T0 + 5300, rateLimited: true, attempt: 1, token: b.leaseToken, worker: 'b', startedAt: T0 + 200 },
        { type: 'snoozed', at: T0 + 5310, runAt: T0 + 5320, rateLimited: false, attempt: 1, token: c.leaseToken, worker: 'c', startedAt: T0 + 5300 },
      ]);
      expect(r).toMatchObject({ leaseToken: d.leaseToken, lastWorker: 'd', job: { state: 'completed', attempt: 1, leaseOwner: null } });
      expect(r.job).toEqual(await get(store, a.id));
      expect(story(r)).toEqual([
        ['enqueued', T0, null, null],
        ['started', T0, 1, 'a'],
        ['released', T0 + 100, 1, 'a'],
        ['started', T0 + 200, 1, 'b'],
        ['snoozed', T0 + 300, 1, 'b'],
        ['started', T0 + 5300, 1, 'c'],
        ['snoozed', T0 + 5310, 1, 'c'],
        ['started', T0 + 5320, 1, 'd'],
        ['completed', T0 + 5400, 1, 'd'],
      ]);
      const snoozed = jobTimeline(r).filter((e) => e.type === 'snoozed');
      expect(snoozed).toMatchObject([{ delayMs: 5000, rateLimited: true }, { delayMs: 10, rateLimited: false }]);
      expect(jobTimeline(r)[2]!.summary).toBe(`attempt 1 released on a at shutdown (not counted); due at once in its place in line (runAt ${new Date(T0).toISOString()})`);
    });

    it('a running job is told from its row alone: started on its lease holder; a release that ends it cancelled records the release', async () => {
      const { store } = await h.setup();
      const a = await running(store, {}, { workerId: 'a' });
      expect(story(await record(store, a.id))).toEqual([['enqueued', T0, null, null], ['started', T0, 1, 'a']]);
      await store.jobCancel({ id: a.id, reason: 'enough', by: 'test', now: T0 + 50 });
      expect(await store.jobRelease({ leases: [{ id: a.id, token: a.leaseToken }], now: T0 + 100 })).toEqual([a.id]);
      const r = await record(store, a.id);
      expect(r.events.map((e) => e.type)).toEqual(['cancelRequested', 'released']);
      expect(jobTimeline(r).map((e) => [e.type, e.attempt, e.worker])).toEqual([
        ['enqueued', null, null],
        ['started', 1, 'a'],
        ['cancelRequested', 1, 'a'],
        ['released', 1, 'a'],
        ['cancelled', 1, 'a'],
      ]);
    });

    it('a rescue records the dead worker\'s attempt and what became of the job (queued, failed, cancelled)', async () => {
      const { store } = await h.setup();
      const queued = await running(store, { maxAttempts: 3 }, { workerId: 'a', leaseMs: 1000 });
      const failed = await running(store, { maxAttempts: 1 }, { workerId: 'a', leaseMs: 1000 });
      const cancelled = await running(store, { maxAttempts: 3 }, { workerId: 'a', leaseMs: 1000 });
      await store.jobCancel({ id: cancelled.id, reason: 'stop', by: 'test', now: T0 + 500 });
      expect(await store.jobRescueExpired({ now: T0 + 2000 })).toEqual({ requeued: [queued.id], failed: [failed.id], cancelled: [cancelled.id] });
      const attempt = (job: { leaseToken: number }) => ({ attempt: 1, token: job.leaseToken, worker: 'a', startedAt: T0 });
      expect((await record(store, queued.id)).events).toEqual([{ type: 'rescued', at: T0 + 2000, outcome: 'queued', ...attempt(queued) }]);
      expect((await record(store, failed.id)).events).toEqual([{ type: 'rescued', at: T0 + 2000, outcome: 'failed', ...attempt(failed) }]);
      expect((await record(store, cancelled.id)).events).toEqual([
        { type: 'cancelRequested', at: T0 + 500, by: 'test', reason: 'stop', ...attempt(cancelled) },
        { type: 'rescued', at: T0 + 2000, outcome: 'cancelled', ...attempt(cancelled) },
      ]);

      const b = await claimOne(store, { workerId: 'b', now: T0 + 2000 });
      expect(b.id).toBe(queued.id);
      expect(story(await record(store, queued.id))).toEqual([['enqueued', T0, null, null], ['started', T0, 1, 'a'], ['rescued', T0 + 2000, 1, 'a'], ['started', T0 + 2000, 2, 'b']]);
      const failedStory = jobTimeline(await record(store, failed.id));
      expect(failedStory.map((e) => [e.type, e.attempt, e.worker])).toEqual([['enqueued', null, null], ['started', 1, 'a'], ['rescued', 1, 'a'], ['failed', 1, 'a']]);
      expect(failedStory.at(-1)).toMatchObject({ type: 'failed', error: LEASE_EXPIRED_MESSAGE });
      expect(jobTimeline(await record(store, cancelled.id)).at(-1)).toMatchObject({ type: 'cancelled', attempt: 1, worker: 'a', reason: 'stop' });
    });

    it('a failed attempt with a retry records its error and retry time; a manual retry keeps the outcome it had', async () => {
      const { store } = await h.setup();
      const a = await running(store, { maxAttempts: 2 }, { workerId: 'a' });
      expect(await store.jobFail({ id: a.id, token: a.leaseToken, error: { attempt: 1, time: T0 + 100, message: 'boom 1', stack: null }, retryAt: T0 + 1100, now: T0 + 100 })).toBe(true);
      const b = await claimOne(store, { workerId: 'b', now: T0 + 1100 });
      expect(await store.jobFail({ id: b.id, token: b.leaseToken, error: { attempt: 2, time: T0 + 1200, message: 'boom 2', stack: null }, retryAt: null, now: T0 + 1200 })).toBe(true);
      expect((await record(store, a.id)).lastWorker).toBe('b');
      expect((await store.jobRetry({ id: a.id, now: T0 + 2000 }))?.retried).toBe(true);
      const c = await claimOne(store, { workerId: 'c', now: T0 + 2100 });

      const r = await record(store, a.id);
      expect(r.events).toEqual([
        { type: 'retryScheduled', at: T0 + 100, runAt: T0 + 1100, error: 'boom 1', attempt: 1, token: a.leaseToken, worker: 'a', startedAt: T0 },
        { type: 'retried', at: T0 + 2000, fresh: false, state: 'failed', finishedAt: T0 + 1200, error: 'boom 2', reason: null, attempt: 2, token: b.leaseToken, worker: 'b', startedAt: T0 + 1100 },
      ]);
      expect(story(r)).toEqual([
        ['enqueued', T0, null, null],
        ['started', T0, 1, 'a'],
        ['retryScheduled', T0 + 100, 1, 'a'],
        ['started', T0 + 1100, 2, 'b'],
        ['failed', T0 + 1200, 2, 'b'],
        ['retried', T0 + 2000, null, null],
        ['started', T0 + 2100, 1, 'c'],
      ]);
      expect(r.job).toMatchObject({ id: c.id, state: 'running', leaseOwner: 'c' });
    });

    it('a cancel records who asked: a queued job without an attempt, a running one with it, once; jobCancelMany and jobRetryMany alike', async () => {
      const { store } = await h.setup();
      const queued = await insert(store, { queue: 'q' });
      const run = await running(store, {}, { workerId: 'a' });
      expect((await store.jobCancel({ id: queued.id, reason: 'no', by: 'cli', now: T0 + 10 }))?.outcome).toBe('cancelled');
      expect((await store.jobCancel({ id: run.id, reason: 'first', by: 'http', now: T0 + 20 }))?.outcome).toBe('requested');
      expect((await store.jobCancel({ id: run.id, reason: 'second', now: T0 + 30 }))?.outcome).toBe('requested');
      expect((await record(store, queued.id)).events).toEqual([{ type: 'cancelRequested', at: T0 + 10, by: 'cli', reason: 'no' }]);
      expect((await record(store, run.id)).events).toEqual([{ type: 'cancelRequested', at: T0 + 20, by: 'http', reason: 'first', attempt: 1, token: run.leaseToken, worker: 'a', startedAt: T0 }]);
      expect(jobTimeline(await record(store, queued.id)).map((e) => [e.type, e.attempt, e.summary])).toEqual([
        ['enqueued', null, 'enqueued'],
        ['cancelRequested', null, 'cancel requested by cli: no'],
        ['cancelled', null, 'cancelled: no'],
      ]);

      const q2 = await insert(store, { queue: 'q' });
      const r2 = await running(store, {}, { workerId: 'b' });
      expect(await store.jobCancelMany({ ids: [q2.id, r2.id], reason: 'bulk', by: 'api (cancel-many)', now: T0 + 40 })).toEqual({ cancelled: [q2.id], requested: [r2.id] });
      expect(await store.jobCancelMany({ ids: [r2.id], reason: 'again', now: T0 + 50 })).toEqual({ cancelled: [], requested: [r2.id] });
      expect((await record(store, q2.id)).events).toEqual([{ type: 'cancelRequested', at: T0 + 40, by: 'api (cancel-many)', reason: 'bulk' }]);
      expect((await record(store, r2.id)).events).toEqual([{ type: 'cancelRequested', at: T0 + 40, by: 'api (cancel-many)', reason: 'bulk', attempt: 1, token: r2.leaseToken, worker: 'b', startedAt: T0 }]);

      expect(await store.jobRetryMany({ ids: [queued.id], now: T0 + 60 })).toEqual([queued.id]);
      expect((await record(store, queued.id)).events.at(-1)).toEqual({ type: 'retried', at: T0 + 60, fresh: false, state: 'cancelled', finishedAt: T0 + 10, error: null, reason: 'no', attempt: 0, token: 0, worker: null, startedAt: null });
      expect(jobTimeline(await record(store, queued.id)).map((e) => e.type)).toEqual(['enqueued', 'cancelRequested', 'cancelled', 'retried']);
    });

    it('a concurrency strategy\'s cancel names it (key:<strategy>), a schedule\'s overlap names the schedule', async () => {
      const { store } = await h.setup();
      const keyed = { concurrencyKey: 'doc', concurrencyLimit: 1, concurrencyStrategy: 'keepLatest' as const };
      const older = await insert(store, keyed);
      await insert(store, keyed, T0 + 10);
      expect((await record(store, older.id)).events).toEqual([{ type: 'cancelRequested', at: T0 + 10, by: 'key:keepLatest', reason: expect.any(String) }]);

      const tick = { task: 't', concurrencyKey: scheduleConcurrencyKey('nightly'), concurrencyLimit: 1, concurrencyStrategy: 'cancelInProgress' as const };
      const first = await running(store, tick, { workerId: 'a', now: T0 + 20 });
      await store.jobInsertMany({ jobs: [newJob(tick)], now: T0 + 30 });
      expect((await record(store, first.id)).events).toEqual([
        { type: 'cancelRequested', at: T0 + 30, by: 'schedule:nightly', reason: expect.stringContaining('nightly'), attempt: 1, token: first.leaseToken, worker: 'a', startedAt: T0 + 20 },
      ]);
    });
  });
}
