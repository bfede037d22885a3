import { describe, expect, it } from 'vitest';
import { jobTimeline } from '../../src/job/timeline.js';
import { jobView } from '../../src/job/view.js';
import type { ClaimedJob } from '../../src/job/types.js';
import type { StepRecord, Store } from '../../src/store/store.js';
import { claim, claimOne, get, ms, newJob, running, T0, takeover, type Harness } from './harness.js';

/** A completed step `a` (seq 1) of attempt 1, with times off the second so ms survive. */
export const step = (overrides: Partial<StepRecord> = {}): StepRecord => ({
  name: 'a', seq: 1, state: 'completed', attempt: 1, tries: 1, startedAt: T0 + 123, finishedAt: T0 + 456, result: '{"x":1}', error: null, ...overrides,
});

/** The lease of a claimed job, as jobRelease takes it. */
const lease = (job: ClaimedJob) => [{ id: job.id, token: job.leaseToken }];

/** A sleep's StoredWait as jobRelease takes it (JSON text). */
export const sleepWait = (until: number) => JSON.stringify({ kind: 'sleep', until });

/** Saves `s` for the running job `job` and expects it written. */
async function save(store: Store, job: ClaimedJob, s: StepRecord = step()): Promise<void> {
  expect(await store.jobStepSave({ id: job.id, token: job.leaseToken, step: s })).toBe(true);
}

/** Fails the running job for good (no retry). */
async function failForGood(store: Store, job: ClaimedJob, now: number): Promise<void> {
  expect(await store.jobFail({ id: job.id, token: job.leaseToken, error: { attempt: job.attempt, time: now, message: 'boom', stack: null }, retryAt: null, now })).toBe(true);
}

/** The step log (migration 22): jobStepSave/jobStepList, fenced by the lease; deleted with its job and by a fresh retry; and the suspension (jobSuspend) of a sleep. */
export function stepTests(h: Harness): void {
  describe('jobStepSave / jobStepList', () => {
    it('stores steps while the job runs under its token; the list is in seq order with every field as saved; [] for a job without steps or an unknown id', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      const other = await running(store);
      expect(await store.jobStepList({ id: job.id })).toEqual([]);
      const b = step({ name: 'b', seq: 2, state: 'failed', tries: 3, startedAt: T0 + 1001, finishedAt: T0 + 2002, result: null, error: 'step b broke' });
      const c = step({ name: 'c', seq: 3, state: 'waiting', startedAt: T0 + 3003, finishedAt: null, result: String(T0 + 60_000) });
      const a = step({ result: '{"nested":{"list":[1,2.5,"é ✓",null,true]},"s":"quote \\" backslash \\\\"}' });
      const a2 = step({ name: 'a#2', seq: 4, result: '"text"' });
      const a3 = step({ name: 'a#3', seq: 5, result: 'null', attempt: 2 });
      // Saved out of seq order: the list orders by seq.
      for (const s of [c, a3, b, a, a2]) await save(store, job, s);
      await save(store, other, step({ name: 'elsewhere' }));
      expect(await store.jobStepList({ id: job.id })).toEqual([a, b, c, a2, a3]);
      expect(await store.jobStepList({ id: other.id })).toEqual([step({ name: 'elsewhere' })]);
      expect(await store.jobStepList({ id: job.id + 1000 })).toEqual([]);
    });

    it('a step saved again under the same name is replaced (one row, every field the new one)', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      await save(store, job, step({ state: 'failed', tries: 2, result: null, error: 'first try broke' }));
      await save(store, job, step({ name: 'b', seq: 2 }));
      const replaced = step({ seq: 7, state: 'completed', attempt: 3, tries: 4, startedAt: T0 + 5000, finishedAt: T0 + 6000, result: '[1]', error: null });
      await save(store, job, replaced);
      expect(await store.jobStepList({ id: job.id })).toEqual([step({ name: 'b', seq: 2 }), replaced]);
      // And back to a waiting step: finishedAt null again.
      const waiting = step({ state: 'waiting', finishedAt: null, result: '42' });
      await save(store, job, waiting);
      expect(await store.jobStepList({ id: job.id })).toEqual([waiting, step({ name: 'b', seq: 2 })]);
    });

    it('refused with a stale token after a rescue and a new claim: false, nothing written; the new holder writes', async () => {
      const { store } = await h.setup();
      const { id, stale, fresh, at } = await takeover(store);
      expect(await store.jobStepSave({ id, token: stale, step: step() })).toBe(false);
      expect(await store.jobStepSave({ id, token: stale, step: step({ name: 'z', seq: 9 }) })).toBe(false);
      expect(await store.jobStepList({ id })).toEqual([]);
      const mine = step({ attempt: 2, startedAt: at, finishedAt: at + 1 });
      expect(await store.jobStepSave({ id, token: fresh, step: mine })).toBe(true);
      // The stale holder cannot replace the new holder's step either.
      expect(await store.jobStepSave({ id, token: stale, step: step({ result: '"stale"' }) })).toBe(false);
      expect(await store.jobStepList({ id })).toEqual([mine]);
    });

    it('refused once the attempt ended: after completion, a final failure, a retry scheduled, a release, a waiting release, a finished cancel', async () => {
      const { store } = await h.setup();
      const kept = step();
      const late = step({ name: 'late', seq: 2 });
      const ends: Array<[string, (job: ClaimedJob) => Promise<unknown>]> = [
        ['completed', (j) => store.jobCompleteMany({ items: [{ id: j.id, token: j.leaseToken, result: '1' }], now: T0 + 10 })],
        ['failed', (j) => failForGood(store, j, T0 + 10)],
        ['retry scheduled', (j) => store.jobFail({ id: j.id, token: j.leaseToken, error: { attempt: 1, time: T0 + 10, message: 'x', stack: null }, retryAt: T0 + 60_000, now: T0 + 10 })],
        ['released', (j) => store.jobRelease({ leases: lease(j), now: T0 + 10 })],
        ['waiting', (j) => store.jobSuspend({ items: [{ id: j.id, token: j.leaseToken, runAt: T0 + 60_000, wait: sleepWait(T0 + 60_000) }], now: T0 + 10 })],
        ['cancelled', async (j) => {
          await store.jobCancel({ id: j.id, reason: null, now: T0 + 5 });
          expect(await store.jobFinishCancelled({ id: j.id, token: j.leaseToken, now: T0 + 10 })).toBe(true);
        }],
      ];
      for (const [what, end] of ends) {
        const job = await running(store, { task: what });
        await save(store, job, kept);
        await end(job);
        expect(await store.jobStepSave({ id: job.id, token: job.leaseToken, step: late }), what).toBe(false);
        expect(await store.jobStepSave({ id: job.id, token: job.leaseToken, step: step({ result: '"overwritten"' }) }), what).toBe(false);
        expect(await store.jobStepList({ id: job.id }), what).toEqual([kept]);
      }
    });
  });

  describe('jobStepsOrphaned', () => {
    it('appends a stepsOrphaned event naming the steps, with the running attempt, to the timeline; refused (false, nothing written) with a stale token', async () => {
      const { store } = await h.setup();
      const { id, stale, fresh, at } = await takeover(store);
      expect(await store.jobStepsOrphaned({ id, token: stale, steps: ['old'], now: at + 5 })).toBe(false);
      expect((await store.jobTimeline({ id }))!.events.some((e) => e.type === 'stepsOrphaned')).toBe(false);
      expect(await store.jobStepsOrphaned({ id, token: fresh, steps: ['old', 'gone#2'], now: at + 10 })).toBe(true);
      const record = (await store.jobTimeline({ id }))!;
      expect(record.events.at(-1)).toMatchObject({ type: 'stepsOrphaned', at: at + 10, steps: ['old', 'gone#2'], attempt: 2, token: fresh });
      const entry = jobTimeline(record).find((e) => e.type === 'stepsOrphaned')!;
      expect(entry.summary).toBe('attempt 2 completed without reaching stored steps "old", "gone#2" (renamed or removed since they ran; kept, unused)');
    });
  });

  describe('steps and the life of their job', () => {
    it('jobDelete of a finished or queued job deletes its steps; a running job (not deleted) keeps them; other jobs keep theirs', async () => {
      const { store } = await h.setup();
      const done = await running(store, { task: 'done' });
      await save(store, done);
      await store.jobCompleteMany({ items: [{ id: done.id, token: done.leaseToken, result: '1' }], now: T0 + 10 });
      const failed = await running(store, { task: 'failed' });
      await save(store, failed);
      await failForGood(store, failed, T0 + 10);
      const queued = await running(store, { task: 'queued' });
      await save(store, queued);
      expect(await store.jobRelease({ leases: lease(queued), now: T0 + 10 })).toEqual([queued.id]);
      const busy = await running(store, { task: 'busy' });
      await save(store, busy);

      expect(await store.jobDelete({ id: done.id })).toEqual({ state: 'completed', deleted: true });
      expect(await store.jobDelete({ id: failed.id })).toEqual({ state: 'failed', deleted: true });
      expect(await store.jobDelete({ id: queued.id })).toEqual({ state: 'queued', deleted: true });
      expect(await store.jobDelete({ id: busy.id })).toEqual({ state: 'running', deleted: false });
      for (const id of [done.id, failed.id, queued.id]) expect(await store.jobStepList({ id })).toEqual([]);
      expect(await store.jobStepList({ id: busy.id })).toEqual([step()]);
    });

    it('jobDeleteFinished (retention) deletes the steps of the jobs it deletes, and only theirs', async () => {
      const { store } = await h.setup();
      const old = await running(store, { queue: 'q', task: 'old' });
      await save(store, old);
      await store.jobCompleteMany({ items: [{ id: old.id, token: old.leaseToken, result: '1' }], now: T0 + 10 });
      const recent = await running(store, { queue: 'q', task: 'recent' });
      await save(store, recent, step({ name: 'r' }));
      await store.jobCompleteMany({ items: [{ id: recent.id, token: recent.leaseToken, result: '1' }], now: T0 + 1000 });
      expect(await store.jobDeleteFinished({ states: ['completed'], finishedBefore: T0 + 500, limit: 100 })).toBe(1);
      expect(await store.jobGet({ id: old.id })).toBeNull();
      expect(await store.jobStepList({ id: old.id })).toEqual([]);
      expect(await store.jobStepList({ id: recent.id })).toEqual([step({ name: 'r' })]);
      expect(await store.jobDeleteFinishedBeyond({ queue: 'q', keep: 0, limit: 100 })).toBe(1);
      expect(await store.jobStepList({ id: recent.id })).toEqual([]);
    });

    it('jobRetry keeps the steps (replayed by the next run); a fresh jobRetry deletes them', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      await save(store, job);
      await save(store, job, step({ name: 'b', seq: 2, state: 'failed', result: null, error: 'broke' }));
      await failForGood(store, job, T0 + 10);
      expect((await store.jobRetry({ id: job.id, now: T0 + 20 }))!.retried).toBe(true);
      const steps = await store.jobStepList({ id: job.id });
      expect(steps).toEqual([step(), step({ name: 'b', seq: 2, state: 'failed', result: null, error: 'broke' })]);

      const again = await claimOne(store, { now: T0 + 20 });
      expect(again.id).toBe(job.id);
      await failForGood(store, again, T0 + 30);
      expect((await store.jobRetry({ id: job.id, now: T0 + 40, fresh: true }))!.retried).toBe(true);
      expect(await store.jobStepList({ id: job.id })).toEqual([]);
    });

    it('jobRetryMany keeps the steps; with fresh it deletes those of the jobs it retries, and no others', async () => {
      const { store } = await h.setup();
      const a = await running(store, { task: 'a' });
      const b = await running(store, { task: 'b' });
      const bystander = await running(store, { task: 'c' });
      for (const job of [a, b, bystander]) await save(store, job);
      await failForGood(store, a, T0 + 10);
      await store.jobCancel({ id: b.id, reason: null, now: T0 + 10 });
      expect(await store.jobFinishCancelled({ id: b.id, token: b.leaseToken, now: T0 + 10 })).toBe(true);
      await failForGood(store, bystander, T0 + 10);

      expect(await store.jobRetryMany({ ids: [a.id, b.id], now: T0 + 20 })).toEqual([a.id, b.id]);
      for (const job of [a, b]) expect(await store.jobStepList({ id: job.id })).toEqual([step()]);

      for (const task of ['a', 'b']) {
        const again = await claimOne(store, { tasks: [task], now: T0 + 30 });
        await failForGood(store, again, T0 + 40);
      }
      expect(await store.jobRetryMany({ ids: [a.id, b.id], now: T0 + 50, fresh: true })).toEqual([a.id, b.id]);
      for (const job of [a, b]) expect(await store.jobStepList({ id: job.id })).toEqual([]);
      expect(await store.jobStepList({ id: bystander.id })).toEqual([step()]);
    });
  });

  describe('jobPromote of a waiting job', () => {
    it('leaves a job suspended on a durable wait alone (promoted false): promoted, it would only suspend again', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      const until = T0 + 60_000;
      expect(await store.jobSuspend({ items: [{ id: job.id, token: job.leaseToken, runAt: until, wait: sleepWait(until) }], now: T0 + 10 })).toEqual([job.id]);
      const answer = (await store.jobPromote({ id: job.id, now: T0 + 20 }))!;
      expect(answer.promoted).toBe(false);
      expect(ms(answer.job.runAt)).toBe(until);
      expect(answer.job.wait).toEqual({ kind: 'sleep', until: new Date(until) });
    });
  });

  describe('jobSuspend (a sleep)', () => {
    it('suspends the run: queued, due at the wait end, attempt not counted, wait stored, view waiting, a waiting event; the steps stay', async () => {
      const { store } = await h.setup();
      const job = await running(store, {}, { workerId: 'w1' });
      await save(store, job);
      const until = T0 + 3_600_000;
      expect(await store.jobSuspend({ items: [{ id: job.id, token: job.leaseToken, runAt: until, wait: sleepWait(until) }], now: T0 + 100 })).toEqual([job.id]);

      const stored = await get(store, job.id);
      expect(stored).toMatchObject({ state: 'queued', attempt: 0, leaseOwner: null, wait: { kind: 'sleep', until: new Date(until) } });
      expect(ms(stored.runAt)).toBe(until);
      expect(stored.finishedAt).toBeNull();
      expect(jobView(stored, T0 + 100)).toBe('waiting');
      expect(await store.jobStepList({ id: job.id })).toEqual([step()]);

      const record = (await store.jobTimeline({ id: job.id }))!;
      expect(record.events).toEqual([
        { type: 'waiting', at: T0 + 100, runAt: until, wait: { kind: 'sleep', until }, attempt: 1, token: job.leaseToken, worker: 'w1', startedAt: T0 },
      ]);
      expect(record.job).toEqual(stored);
      const story = jobTimeline(record);
      expect(story.map((e) => e.type)).toEqual(['enqueued', 'started', 'waiting']);
      expect(story[2]).toMatchObject({ type: 'waiting', at: new Date(T0 + 100), attempt: 1, worker: 'w1', runAt: new Date(until), wait: 'sleep', topic: null });

      // Not due before the wait's end; due at it, and the claim does not count the suspended attempt again.
      expect(await claim(store, { now: until - 1 })).toEqual([]);
      const resumed = await claimOne(store, { workerId: 'w2', now: until });
      expect(resumed).toMatchObject({ id: job.id, attempt: 1 });
    });

    it('the next end of an attempt clears the wait: completion (alone or with a claim), failure (retry or final), a shutdown release, a snooze, a finished cancel, a rescue', async () => {
      const { store } = await h.setup();
      const until = T0 + 1000;
      const ends: Array<[string, (job: ClaimedJob) => Promise<unknown>]> = [
        ['completed', (j) => store.jobCompleteMany({ items: [{ id: j.id, token: j.leaseToken, result: '1' }], now: until + 10 })],
        ['retry scheduled', (j) => store.jobFail({ id: j.id, token: j.leaseToken, error: { attempt: 1, time: until + 10, message: 'x', stack: null }, retryAt: until + 60_000, now: until + 10 })],
        ['failed', (j) => failForGood(store, j, until + 10)],
        ['released', (j) => store.jobRelease({ leases: lease(j), now: until + 10 })],
        ['snoozed', (j) => store.jobRelease({ leases: lease(j), now: until + 10, runAt: until + 5000, cause: 'snooze' })],
        ['completed and claimed', (j) => store.jobCompleteAndClaim({ items: [{ id: j.id, token: j.leaseToken, result: '1' }], workerId: 'w1', tasks: ['none'], queues: ['default'], limit: 1, leaseMs: 30_000, now: until + 10 })],
        ['cancelled', async (j) => {
          await store.jobCancel({ id: j.id, reason: null, now: until + 5 });
          expect(await store.jobFinishCancelled({ id: j.id, token: j.leaseToken, now: until + 10 })).toBe(true);
        }],
        ['rescued', async (j) => expect((await store.jobRescueExpired({ now: until + 60_000 })).requeued).toEqual([j.id])],
      ];
      for (const [what, end] of ends) {
        const first = await running(store, { task: what });
        expect(await store.jobSuspend({ items: [{ id: first.id, token: first.leaseToken, runAt: until, wait: sleepWait(until) }], now: T0 + 10 })).toEqual([first.id]);
        expect((await get(store, first.id)).wait, what).not.toBeNull();
        const second = await claimOne(store, { tasks: [what], now: until });
        await end(second);
        const after = await get(store, first.id);
        expect(after.wait, what).toBeNull();
        expect(jobView(after, until + 10), what).not.toBe('waiting');
      }
    });

    it('a waiting release of a job with a cancel request ends it cancelled, with no wait', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      await store.jobCancel({ id: job.id, reason: 'stop', by: 'test', now: T0 + 50 });
      const until = T0 + 3_600_000;
      expect(await store.jobSuspend({ items: [{ id: job.id, token: job.leaseToken, runAt: until, wait: sleepWait(until) }], now: T0 + 100 })).toEqual([job.id]);
      const stored = await get(store, job.id);
      expect(stored).toMatchObject({ state: 'cancelled', wait: null, leaseOwner: null });
      expect(ms(stored.finishedAt)).toBe(T0 + 100);
      expect(jobView(stored, T0 + 100)).toBe('cancelled');
      expect(await claim(store, { now: until })).toEqual([]);
    });

    it('jobSuspend suspends several runs in one call, each with its own wait and due time; a cancel-requested one ends cancelled; a stale lease is left out', async () => {
      const { store } = await h.setup();
      await store.jobInsertMany({ jobs: [newJob(), newJob(), newJob()], now: T0 });
      const [a, b, c] = await claim(store, { limit: 3 });
      await store.jobCancel({ id: c!.id, reason: 'stop', now: T0 + 5 });
      const items = [a!, b!, c!].map((j, i) => ({ id: j.id, token: j.leaseToken, runAt: T0 + 1000 * (i + 1), wait: sleepWait(T0 + 1000 * (i + 1)) }));
      expect((await store.jobSuspend({ items, now: T0 + 10 })).sort((x, y) => x - y)).toEqual([a!.id, b!.id, c!.id].sort((x, y) => x - y));
      expect(await get(store, a!.id)).toMatchObject({ state: 'queued', attempt: 0, leaseOwner: null, wait: { kind: 'sleep', until: new Date(T0 + 1000) }, runAt: new Date(T0 + 1000) });
      expect(await get(store, b!.id)).toMatchObject({ state: 'queued', attempt: 0, wait: { kind: 'sleep', until: new Date(T0 + 2000) }, runAt: new Date(T0 + 2000) });
      expect(await get(store, c!.id)).toMatchObject({ state: 'cancelled', wait: null, cancelReason: 'stop' });
      expect(await store.jobSuspend({ items: [], now: T0 + 20 })).toEqual([]);

      const { id, stale } = await takeover(store);
      expect(await store.jobSuspend({ items: [{ id, token: stale, runAt: T0 + 9000, wait: sleepWait(T0 + 9000) }], now: T0 + 3000 })).toEqual([]);
      expect(await get(store, id)).toMatchObject({ state: 'running', wait: null, leaseOwner: 'b' });
    });
  });
}
