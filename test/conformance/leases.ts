import { describe, expect, it } from 'vitest';
import type { Store, StoredError } from '../../src/store/store.js';
import { claim, claimOne, get, insert, ms, running, T0, takeover, type Harness } from './harness.js';

const anError = (attempt: number, time: number): StoredError => ({ attempt, time, message: 'boom', stack: 'Error: boom\n    at here' });

/** Each fenced write, as a call with a given token at a given time. */
const fencedWrites: Array<[string, (store: Store, id: number, token: number, now: number) => Promise<boolean>]> = [
  ['jobCompleteMany', async (s, id, token, now) => (await s.jobCompleteMany({ items: [{ id, token, result: '"late"' }], now })).completed.includes(id)],
  ['jobCompleteAndClaim', async (s, id, token, now) => (await s.jobCompleteAndClaim({ items: [{ id, token, result: '"late"' }], workerId: 'c', tasks: ['none'], queues: ['default'], limit: 1, leaseMs: 1000, now })).completed.includes(id)],
  ['jobFail (retry)', (s, id, token, now) => s.jobFail({ id, token, error: anError(1, now), retryAt: now + 1000, now })],
  ['jobFail (final)', (s, id, token, now) => s.jobFail({ id, token, error: anError(1, now), retryAt: null, now })],
  ['jobFinishCancelled', (s, id, token, now) => s.jobFinishCancelled({ id, token, now })],
  ['jobCheckpoint', (s, id, token) => s.jobCheckpoint({ id, token, checkpoint: '{"late":true}' })],
  ['jobProgress', (s, id, token) => s.jobProgress({ id, token, progress: { current: 99, total: 100, message: 'late' } })],
  ['jobRelease', async (s, id, token, now) => (await s.jobRelease({ leases: [{ id, token }], now })).includes(id)],
  ['leaseExtendMany', async (s, id, token, now) => (await s.leaseExtendMany({ owner: 'a', leases: [{ id, token }], leaseMs: 60_000, now })).lost.length === 0],
];

/** Job leases (fencing, heartbeat, rescue, release) and named leases. */
export function leaseTests(h: Harness): void {
  describe('fenced writes', () => {
    it.each(fencedWrites)('%s with the token of a run that was taken over is refused and changes nothing', async (_name, write) => {
      const { store } = await h.setup();
      const { id, stale, at, before } = await takeover(store);
      const { leaseToken: _, ...current } = before;
      expect(await write(store, id, stale, at + 1)).toBe(false);
      expect(await get(store, id)).toEqual(current);
    });

    it.each(fencedWrites)('%s with the current token applies', async (name, write) => {
      const { store } = await h.setup();
      const { id, fresh, at } = await takeover(store);
      // leaseExtendMany is fenced by owner too: the current holder is `b`.
      const applied = name === 'leaseExtendMany' ? (await store.leaseExtendMany({ owner: 'b', leases: [{ id, token: fresh }], leaseMs: 1, now: at })).lost.length === 0 : await write(store, id, fresh, at + 1);
      expect(applied).toBe(true);
    });

    it.each(fencedWrites.filter(([name]) => name !== 'leaseExtendMany'))('%s on a job that is no longer running is refused', async (_name, write) => {
      const { store } = await h.setup();
      const job = await running(store);
      expect(await store.jobCompleteMany({ items: [{ id: job.id, token: job.leaseToken, result: '1' }], now: T0 + 1 })).toEqual({ completed: [job.id], enqueued: [] });
      const before = await get(store, job.id);
      expect(await write(store, job.id, job.leaseToken, T0 + 2)).toBe(false);
      expect(await get(store, job.id)).toEqual(before);
    });

    it('jobCompleteMany completes the held items of a batch, stores each result and leaves the lost ones out', async () => {
      const { store } = await h.setup();
      const { id: lostId, stale } = await takeover(store);
      const x = await running(store, { task: 'x' }, { now: T0 + 3000 });
      const y = await running(store, { task: 'y' }, { now: T0 + 3000 });
      const done = await store.jobCompleteMany({
        items: [{ id: x.id, token: x.leaseToken, result: '{"ok":1}' }, { id: lostId, token: stale, result: '0' }, { id: y.id, token: y.leaseToken, result: '"two"' }],
        now: T0 + 4000,
      });
      expect([...done.completed].sort((a, b) => a - b)).toEqual([x.id, y.id]);
      expect(done.enqueued).toEqual([]);
      expect(await get(store, x.id)).toMatchObject({ state: 'completed', result: { ok: 1 }, leaseOwner: null, leaseExpiresAt: null });
      expect(ms((await get(store, x.id)).finishedAt)).toBe(T0 + 4000);
      expect((await get(store, y.id)).result).toBe('two');
      expect((await get(store, lostId)).state).toBe('running');
      expect(await store.jobCompleteMany({ items: [], now: T0 })).toEqual({ completed: [], enqueued: [] });
    });

    it('jobCompleteAndClaim completes the held items as jobCompleteMany does, then claims as jobClaim does', async () => {
      const { store } = await h.setup();
      const { id: lostId, stale } = await takeover(store);
      const x = await running(store, { task: 'x' }, { now: T0 + 3000 });
      const next = [await insert(store, { task: 'x', priority: 2 }), await insert(store, { task: 'x', priority: 1 }), await insert(store, { task: 'x', priority: 3 })];
      const { completed, claimed } = await store.jobCompleteAndClaim({
        items: [{ id: x.id, token: x.leaseToken, result: '{"ok":1}' }, { id: lostId, token: stale, result: '0' }],
        workerId: 'w2', tasks: ['x'], queues: ['default'], limit: 2, leaseMs: 5000, now: T0 + 4000,
      });
      expect(completed).toEqual([x.id]);
      expect(await get(store, x.id)).toMatchObject({ state: 'completed', result: { ok: 1 }, leaseOwner: null });
      expect(ms((await get(store, x.id)).finishedAt)).toBe(T0 + 4000);
      expect((await get(store, lostId)).state).toBe('running');
      // In claim order (priority), each running under a new lease of w2.
      expect(claimed.map((j) => j.id)).toEqual([next[1]!.id, next[0]!.id]);
      for (const job of claimed) {
        expect(job).toMatchObject({ state: 'running', attempt: 1, leaseOwner: 'w2' });
        expect(ms(job.leaseExpiresAt)).toBe(T0 + 9000);
        expect(await get(store, job.id)).toMatchObject({ state: 'running', leaseOwner: 'w2' });
      }
      expect((await get(store, next[2]!.id)).state).toBe('queued');
      // Nothing to complete: a plain claim. Nothing to claim: the completions alone.
      expect(await store.jobCompleteAndClaim({ items: [], workerId: 'w2', tasks: ['x'], queues: ['default'], limit: 5, leaseMs: 5000, now: T0 + 4001 }))
        .toMatchObject({ completed: [], claimed: [{ id: next[2]!.id }] });
      const held = claimed[0]!;
      expect(await store.jobCompleteAndClaim({ items: [{ id: held.id, token: held.leaseToken, result: '2' }], workerId: 'w2', tasks: ['x'], queues: ['default'], limit: 5, leaseMs: 5000, now: T0 + 4002 }))
        .toEqual({ completed: [held.id], enqueued: [], claimed: [] });
      expect((await get(store, held.id)).result).toBe(2);
    });

    it('jobCompleteAndClaim counts the jobs it completes as ended: their queue limit and concurrency key have room in the same call', async () => {
      const { store } = await h.setup();
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: 2, now: T0 })).toBe(true);
      const a = await running(store, { queue: 'q' });
      const b = await running(store, { queue: 'q' });
      const k = await running(store, { queue: 'keys', concurrencyKey: 'K', concurrencyLimit: 1 });
      const queued = [await insert(store, { queue: 'q' }), await insert(store, { queue: 'q' }), await insert(store, { queue: 'q' })];
      const sameKey = await insert(store, { queue: 'keys', concurrencyKey: 'K', concurrencyLimit: 1 });
      expect(await claim(store, { queues: ['q', 'keys'], now: T0 + 1 })).toEqual([]); // both at their limit
      const { completed, claimed } = await store.jobCompleteAndClaim({
        items: [a, b, k].map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })),
        workerId: 'w1', tasks: ['t'], queues: ['q', 'keys'], limit: 10, leaseMs: 30_000, now: T0 + 2,
      });
      expect([...completed].sort((x, y) => x - y)).toEqual([a.id, b.id, k.id]);
      expect(claimed.map((j) => j.id).sort((x, y) => x - y)).toEqual([queued[0]!.id, queued[1]!.id, sameKey.id]);
      expect((await get(store, queued[2]!.id)).state).toBe('queued');
    });

    it('jobFail with retryAt after a cancel was requested → cancelled, not retried, its error kept; a stale token writes nothing (found by the soak: the job ran again after its cancel)', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      expect((await store.jobCancel({ id: job.id, reason: 'stop', now: T0 + 5 }))!.outcome).toBe('requested');
      expect(await store.jobFail({ id: job.id, token: job.leaseToken + 1, error: anError(1, T0 + 10), retryAt: T0 + 5000, now: T0 + 10 })).toBe(false);
      expect(await store.jobFail({ id: job.id, token: job.leaseToken, error: anError(1, T0 + 10), retryAt: T0 + 5000, now: T0 + 10 })).toBe(true);
      const ended = await get(store, job.id);
      expect(ended).toMatchObject({ state: 'cancelled', attempt: 1, leaseOwner: null, cancelReason: 'stop' });
      expect(ms(ended.finishedAt)).toBe(T0 + 10);
      expect(ended.errors.map((e) => [e.attempt, e.message])).toEqual([[1, 'boom']]);
      expect(await store.jobClaim({ workerId: 'w2', tasks: ['t'], queues: ['q'], limit: 10, leaseMs: 30_000, now: T0 + 6000 })).toEqual([]);
    });

    it('jobFail with retryAt → queued at that time, the error appended, attempt kept; with null → failed', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      expect(await store.jobFail({ id: job.id, token: job.leaseToken, error: anError(1, T0 + 10), retryAt: T0 + 5000, now: T0 + 10 })).toBe(true);
      const retrying = await get(store, job.id);
      expect(retrying).toMatchObject({ state: 'queued', attempt: 1, leaseOwner: null, leaseExpiresAt: null, finishedAt: null });
      expect(ms(retrying.runAt)).toBe(T0 + 5000);
      expect(retrying.errors).toEqual([{ attempt: 1, time: new Date(T0 + 10), message: 'boom', stack: 'Error: boom\n    at here' }]);

      const second = await claimOne(store, { now: T0 + 5000 });
      expect(second.attempt).toBe(2);
      expect(await store.jobFail({ id: job.id, token: second.leaseToken, error: { ...anError(2, T0 + 6000), stack: null }, retryAt: null, now: T0 + 6000 })).toBe(true);
      const failed = await get(store, job.id);
      expect(failed).toMatchObject({ state: 'failed', attempt: 2, leaseOwner: null });
      expect(ms(failed.finishedAt)).toBe(T0 + 6000);
      expect(failed.errors.map((e) => [e.attempt, ms(e.time), e.stack])).toEqual([
        [1, T0 + 10, 'Error: boom\n    at here'],
        [2, T0 + 6000, null],
      ]);
    });

    it('jobFinishCancelled: running (with a cancel request) → cancelled', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      await store.jobCancel({ id: job.id, reason: 'stop', now: T0 + 1 });
      expect(await store.jobFinishCancelled({ id: job.id, token: job.leaseToken, now: T0 + 2 })).toBe(true);
      const cancelled = await get(store, job.id);
      expect(cancelled).toMatchObject({ state: 'cancelled', cancelReason: 'stop', leaseOwner: null, leaseExpiresAt: null });
      expect(ms(cancelled.finishedAt)).toBe(T0 + 2);
    });

    it('jobCheckpoint and jobProgress store their values; the last write wins', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      expect(await store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: '{"page":1}' })).toBe(true);
      expect(await store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: '{"page":2,"done":["a"]}' })).toBe(true);
      expect(await store.jobProgress({ id: job.id, token: job.leaseToken, progress: { current: 1 } })).toBe(true);
      expect(await store.jobProgress({ id: job.id, token: job.leaseToken, progress: { current: 5, total: 10, message: 'half' } })).toBe(true);
      expect(await get(store, job.id)).toMatchObject({ checkpoint: { page: 2, done: ['a'] }, progress: { current: 5, total: 10, message: 'half' }, state: 'running' });
    });
  });

  describe('jobRelease', () => {
    it('→ queued with its runAt kept, lease cleared, the attempt not counted, checkpoint and progress kept', async () => {
      const { store } = await h.setup();
      const job = await running(store, { runAt: T0 - 50_000 });
      await store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: '{"at":3}' });
      const other = await running(store, { task: 'other' });
      const released = await store.jobRelease({ leases: [{ id: job.id, token: job.leaseToken }, { id: other.id, token: other.leaseToken }], now: T0 + 100 });
      expect([...released].sort((a, b) => a - b)).toEqual([job.id, other.id]);
      const after = await get(store, job.id);
      expect(after).toMatchObject({ state: 'queued', attempt: 0, leaseOwner: null, leaseExpiresAt: null, finishedAt: null, checkpoint: { at: 3 } });
      expect(ms(after.runAt)).toBe(T0 - 50_000);
      expect(await store.jobRelease({ leases: [], now: T0 })).toEqual([]);
    });

    it('a released job keeps its place in line: the next claim takes it before the backlog enqueued while it ran (issue 30)', async () => {
      const { store } = await h.setup();
      const a = await running(store, { runAt: T0 });
      const backlog = [await insert(store, { runAt: T0 + 10 }, T0 + 10), await insert(store, { runAt: T0 + 20 }, T0 + 20)];
      const urgent = await insert(store, { runAt: T0 + 30, priority: -1 }, T0 + 30);
      expect(await store.jobRelease({ leases: [{ id: a.id, token: a.leaseToken }], now: T0 + 1000 })).toEqual([a.id]);
      // Priority first (a lower one runs first), then the released job ahead of the jobs due after it.
      const order = [];
      for (let i = 0; i < 4; i++) order.push((await claimOne(store, { now: T0 + 1000 + i })).id);
      expect(order).toEqual([urgent.id, a.id, ...backlog.map((j) => j.id)]);
    });

    it('a snoozed job is placed as a job delayed to its runAt: behind the jobs due before it, ahead of those due after', async () => {
      const { store } = await h.setup();
      const a = await running(store, { runAt: T0 });
      const before = await insert(store, { runAt: T0 + 10 }, T0 + 10);
      expect(await store.jobRelease({ leases: [{ id: a.id, token: a.leaseToken }], now: T0 + 100, runAt: T0 + 60_000, cause: 'snooze' })).toEqual([a.id]);
      const within = await insert(store, { runAt: T0 + 59_999 }, T0 + 200);
      const after = await insert(store, { runAt: T0 + 60_001 }, T0 + 300);
      const order = [];
      for (let i = 0; i < 4; i++) order.push((await claimOne(store, { now: T0 + 61_000 + i })).id);
      expect(order).toEqual([before.id, within.id, a.id, after.id]);
    });

    it('a released job with a cancel request ends cancelled (the hand-off does not resurrect it)', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      await store.jobCancel({ id: job.id, reason: 'bye', now: T0 + 1 });
      expect(await store.jobRelease({ leases: [{ id: job.id, token: job.leaseToken }], now: T0 + 2 })).toEqual([job.id]);
      const after = await get(store, job.id);
      expect(after).toMatchObject({ state: 'cancelled', leaseOwner: null });
      expect(ms(after.finishedAt)).toBe(T0 + 2);
    });

    it('with runAt (a snooze): queued until runAt, not claimable before it and claimable at it; attempt not counted; a cancel request still ends it cancelled now', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      await store.jobCheckpoint({ id: job.id, token: job.leaseToken, checkpoint: '{"page":7}' });
      expect(await store.jobRelease({ leases: [{ id: job.id, token: job.leaseToken }], now: T0 + 10, runAt: T0 + 60_000 })).toEqual([job.id]);
      const after = await get(store, job.id);
      expect(after).toMatchObject({ state: 'queued', attempt: 0, leaseOwner: null, checkpoint: { page: 7 } });
      expect(ms(after.runAt)).toBe(T0 + 60_000);
      expect(await claim(store, { now: T0 + 59_999 })).toEqual([]);
      const [again] = await claim(store, { now: T0 + 60_000 });
      expect(again).toMatchObject({ id: job.id, attempt: 1 });
      // A stale token (the run that snoozed) can no longer release it.
      expect(await store.jobRelease({ leases: [{ id: job.id, token: job.leaseToken }], now: T0 + 60_001, runAt: T0 + 120_000 })).toEqual([]);

      const asked = await running(store, { task: 'asked' });
      await store.jobCancel({ id: asked.id, reason: 'stop', now: T0 + 20 });
      expect(await store.jobRelease({ leases: [{ id: asked.id, token: asked.leaseToken }], now: T0 + 30, runAt: T0 + 90_000 })).toEqual([asked.id]);
      const cancelled = await get(store, asked.id);
      expect(cancelled.state).toBe('cancelled');
      expect(ms(cancelled.finishedAt)).toBe(T0 + 30);
    });
  });

  describe('leaseExtendMany', () => {
    it('extends the held leases to now + leaseMs and reports the lost ones and the cancel requests', async () => {
      const { store } = await h.setup();
      const { id: takenOver, stale } = await takeover(store); // a's lease, now b's
      const at = T0 + 3000;
      const held = await running(store, { task: 'held' }, { workerId: 'a', now: at });
      const asked = await running(store, { task: 'asked' }, { workerId: 'a', now: at });
      const finished = await running(store, { task: 'finished' }, { workerId: 'a', now: at });
      const foreign = await running(store, { task: 'foreign' }, { workerId: 'c', now: at });
      await store.jobCancel({ id: asked.id, reason: 'please', now: at });
      await store.jobCompleteMany({ items: [{ id: finished.id, token: finished.leaseToken, result: '1' }], now: at });

      const report = await store.leaseExtendMany({
        owner: 'a',
        leases: [
          { id: held.id, token: held.leaseToken },
          { id: takenOver, token: stale },
          { id: asked.id, token: asked.leaseToken },
          { id: finished.id, token: finished.leaseToken },
          { id: foreign.id, token: foreign.leaseToken }, // right token, another owner
          { id: 999_999, token: 1 },
        ],
        leaseMs: 45_000,
        now: at + 500,
      });
      expect([...report.lost].sort((x, y) => x - y)).toEqual([takenOver, finished.id, foreign.id, 999_999].sort((x, y) => x - y));
      expect(report.cancelRequested).toEqual([{ id: asked.id, reason: 'please' }]);
      for (const id of [held.id, asked.id]) expect(ms((await get(store, id)).leaseExpiresAt)).toBe(at + 500 + 45_000);
      expect(ms((await get(store, foreign.id)).leaseExpiresAt)).toBe(at + 30_000);
      expect((await get(store, takenOver)).leaseOwner).toBe('b');
    });

    it('an empty list reports nothing', async () => {
      const { store } = await h.setup();
      expect(await store.leaseExtendMany({ owner: 'a', leases: [], leaseMs: 1000, now: T0 })).toEqual({ lost: [], cancelRequested: [] });
    });

    it('an extended lease is not rescued at its old expiry', async () => {
      const { store } = await h.setup();
      const job = await running(store, {}, { leaseMs: 1000 });
      await store.leaseExtendMany({ owner: 'w1', leases: [{ id: job.id, token: job.leaseToken }], leaseMs: 1000, now: T0 + 900 });
      expect(await store.jobRescueExpired({ now: T0 + 1500 })).toEqual({ requeued: [], failed: [], cancelled: [] });
      expect(await store.jobRescueExpired({ now: T0 + 1901 })).toEqual({ requeued: [job.id], failed: [], cancelled: [] });
    });
  });

  describe('jobRescueExpired', () => {
    const rescued = { attempt: 1, time: new Date(T0 + 2000), stack: null };

    it('an expired lease with attempts left → queued with its runAt kept, the lost attempt counted with an error entry', async () => {
      const { store } = await h.setup();
      const job = await running(store, { maxAttempts: 2 }, { leaseMs: 1000 });
      expect(await store.jobRescueExpired({ now: T0 + 1000 })).toEqual({ requeued: [], failed: [], cancelled: [] }); // expires at, not before
      expect(await store.jobRescueExpired({ now: T0 + 2000 })).toEqual({ requeued: [job.id], failed: [], cancelled: [] });
      const after = await get(store, job.id);
      expect(after).toMatchObject({ state: 'queued', attempt: 1, leaseOwner: null, leaseExpiresAt: null, finishedAt: null });
      expect(ms(after.runAt)).toBe(T0);
      expect(after.errors).toEqual([{ ...rescued, message: expect.stringContaining('lease expired') }]);
      expect((await claimOne(store, { now: T0 + 2000 })).attempt).toBe(2);
    });

    it('a rescued job keeps its place in line: the next claim takes it before the backlog enqueued while it ran (issue 30)', async () => {
      const { store } = await h.setup();
      const a = await running(store, { runAt: T0 }, { leaseMs: 1000 });
      const backlog = [await insert(store, { runAt: T0 + 10 }, T0 + 10), await insert(store, { runAt: T0 + 20 }, T0 + 20)];
      expect(await store.jobRescueExpired({ now: T0 + 2000 })).toEqual({ requeued: [a.id], failed: [], cancelled: [] });
      const order = [];
      for (let i = 0; i < 3; i++) order.push((await claimOne(store, { now: T0 + 2000 + i })).id);
      expect(order).toEqual([a.id, ...backlog.map((j) => j.id)]);
    });

    it('an expired lease on the last attempt → failed, with the error entry', async () => {
      const { store } = await h.setup();
      const job = await running(store, { maxAttempts: 1 }, { leaseMs: 1000 });
      expect(await store.jobRescueExpired({ now: T0 + 2000 })).toEqual({ requeued: [], failed: [job.id], cancelled: [] });
      const after = await get(store, job.id);
      expect(after).toMatchObject({ state: 'failed', attempt: 1, leaseOwner: null, leaseExpiresAt: null });
      expect(ms(after.finishedAt)).toBe(T0 + 2000);
      expect(after.errors).toEqual([{ ...rescued, message: expect.stringContaining('lease expired') }]);
    });

    it('an expired lease with a cancel request → cancelled (no error entry: the run was to stop anyway)', async () => {
      const { store } = await h.setup();
      const job = await running(store, { maxAttempts: 3 }, { leaseMs: 1000 });
      await store.jobCancel({ id: job.id, reason: 'stop', now: T0 + 10 });
      expect(await store.jobRescueExpired({ now: T0 + 2000 })).toEqual({ requeued: [], failed: [], cancelled: [job.id] });
      const after = await get(store, job.id);
      expect(after).toMatchObject({ state: 'cancelled', cancelReason: 'stop', leaseOwner: null, leaseExpiresAt: null, errors: [] });
      expect(ms(after.finishedAt)).toBe(T0 + 2000);
    });

    it('settles every expired lease at once and leaves live ones and other states alone', async () => {
      const { store } = await h.setup();
      const a = await running(store, { task: 'a' }, { leaseMs: 1000 });
      const b = await running(store, { task: 'b', maxAttempts: 1 }, { leaseMs: 1000 });
      const live = await running(store, { task: 'live' }, { leaseMs: 60_000 });
      const queued = await insert(store, { task: 'queued' });
      const report = await store.jobRescueExpired({ now: T0 + 5000 });
      expect(report).toEqual({ requeued: [a.id], failed: [b.id], cancelled: [] });
      expect(await get(store, live.id)).toMatchObject({ state: 'running', leaseOwner: 'w1' });
      expect(await get(store, queued.id)).toEqual(queued);
      expect(await store.jobRescueExpired({ now: T0 + 5000 })).toEqual({ requeued: [], failed: [], cancelled: [] });
    });
  });

  describe('named leases', () => {
    it('acquire: a free name is taken; a live lease is not, even by its owner; an expired one is, with a larger token', async () => {
      const { store } = await h.setup();
      expect(await store.leaseGet({ name: 'n' })).toBeNull();
      const first = await store.leaseAcquire({ name: 'n', owner: 'a', ttlMs: 1000, now: T0 });
      expect(first).toMatchObject({ acquired: true, expiresAt: T0 + 1000 });
      const token1 = (first as { token: number }).token;
      expect(await store.leaseGet({ name: 'n' })).toEqual({ name: 'n', owner: 'a', token: token1, expiresAt: T0 + 1000 });

      expect(await store.leaseAcquire({ name: 'n', owner: 'b', ttlMs: 1000, now: T0 + 999 })).toEqual({ acquired: false, owner: 'a', expiresAt: T0 + 1000 });
      expect(await store.leaseAcquire({ name: 'n', owner: 'a', ttlMs: 5000, now: T0 + 500 })).toEqual({ acquired: false, owner: 'a', expiresAt: T0 + 1000 });

      const second = await store.leaseAcquire({ name: 'n', owner: 'b', ttlMs: 1000, now: T0 + 1000 }); // expires_at <= now: free
      expect(second).toMatchObject({ acquired: true, expiresAt: T0 + 2000 });
      expect((second as { token: number }).token).toBeGreaterThan(token1);
      expect(await store.leaseGet({ name: 'n' })).toMatchObject({ owner: 'b', token: (second as { token: number }).token });

      // Names are independent.
      expect(await store.leaseAcquire({ name: 'other', owner: 'a', ttlMs: 1000, now: T0 + 1000 })).toMatchObject({ acquired: true });
    });

    it('renew: extends while the owner holds the token; a stale token or another owner is refused', async () => {
      const { store } = await h.setup();
      const first = (await store.leaseAcquire({ name: 'n', owner: 'a', ttlMs: 1000, now: T0 })) as { token: number };
      expect(await store.leaseRenew({ name: 'n', owner: 'a', token: first.token, ttlMs: 1000, now: T0 + 800 })).toBe(true);
      expect((await store.leaseGet({ name: 'n' }))?.expiresAt).toBe(T0 + 1800);
      expect(await store.leaseAcquire({ name: 'n', owner: 'b', ttlMs: 1000, now: T0 + 1500 })).toMatchObject({ acquired: false, owner: 'a' });
      expect(await store.leaseRenew({ name: 'n', owner: 'b', token: first.token, ttlMs: 1000, now: T0 + 900 })).toBe(false);

      const second = (await store.leaseAcquire({ name: 'n', owner: 'b', ttlMs: 1000, now: T0 + 1800 })) as { token: number };
      expect(await store.leaseRenew({ name: 'n', owner: 'a', token: first.token, ttlMs: 1000, now: T0 + 1900 })).toBe(false);
      expect(await store.leaseGet({ name: 'n' })).toEqual({ name: 'n', owner: 'b', token: second.token, expiresAt: T0 + 2800 });
      expect(await store.leaseRenew({ name: 'never', owner: 'a', token: 1, ttlMs: 1000, now: T0 })).toBe(false);
    });

    it('release: frees the lease and keeps its token; the next acquire gets a larger one; a stale release never frees a newer holder', async () => {
      const { store } = await h.setup();
      const first = (await store.leaseAcquire({ name: 'n', owner: 'a', ttlMs: 1000, now: T0 })) as { token: number };
      expect(await store.leaseRelease({ name: 'n', owner: 'b', token: first.token })).toBe(false);
      expect(await store.leaseRelease({ name: 'n', owner: 'a', token: first.token })).toBe(true);
      expect(await store.leaseGet({ name: 'n' })).toEqual({ name: 'n', owner: null, token: first.token, expiresAt: null });
      expect(await store.leaseRelease({ name: 'n', owner: 'a', token: first.token })).toBe(false);
      expect(await store.leaseRenew({ name: 'n', owner: 'a', token: first.token, ttlMs: 1000, now: T0 + 1 })).toBe(false);

      // Freed before its expiry: taken at once.
      const second = await store.leaseAcquire({ name: 'n', owner: 'b', ttlMs: 1000, now: T0 + 1 });
      expect(second).toMatchObject({ acquired: true });
      const token2 = (second as { token: number }).token;
      expect(token2).toBeGreaterThan(first.token);

      // a's late release, with the token it held, frees nothing of b's.
      expect(await store.leaseRelease({ name: 'n', owner: 'a', token: first.token })).toBe(false);
      expect(await store.leaseGet({ name: 'n' })).toEqual({ name: 'n', owner: 'b', token: token2, expiresAt: T0 + 1001 });

      // The same owner name holding the lease again: its release with the old token frees nothing.
      expect(await store.leaseRelease({ name: 'n', owner: 'b', token: token2 })).toBe(true);
      const third = (await store.leaseAcquire({ name: 'n', owner: 'a', ttlMs: 1000, now: T0 + 2 })) as { token: number };
      expect(third.token).toBeGreaterThan(token2);
      expect(await store.leaseRelease({ name: 'n', owner: 'a', token: first.token })).toBe(false);
      expect(await store.leaseRenew({ name: 'n', owner: 'a', token: first.token, ttlMs: 5000, now: T0 + 3 })).toBe(false);
      expect(await store.leaseGet({ name: 'n' })).toEqual({ name: 'n', owner: 'a', token: third.token, expiresAt: T0 + 1002 });
    });

    it('tokens only grow across acquires, expiries and releases', async () => {
      const { store } = await h.setup();
      const tokens: number[] = [];
      let now = T0;
      for (let round = 0; round < 6; round++) {
        const owner = round % 2 === 0 ? 'a' : 'b';
        const got = await store.leaseAcquire({ name: 'n', owner, ttlMs: 1000, now });
        expect(got.acquired, `round ${round}`).toBe(true);
        const token = (got as { token: number }).token;
        tokens.push(token);
        if (round % 3 === 0) {
          expect(await store.leaseRelease({ name: 'n', owner, token })).toBe(true);
          now += 1;
        } else now += 1000; // left to expire
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i], `${tokens}`).toBeGreaterThan(tokens[i - 1]!);
    });

    it('two store instances acquiring a free name at once: exactly one gets it', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      for (let round = 0; round < 10; round++) {
        const name = `race-${round}`;
        const answers = await Promise.all([
          store.leaseAcquire({ name, owner: 'a', ttlMs: 1000, now: T0 }),
          other.leaseAcquire({ name, owner: 'b', ttlMs: 1000, now: T0 }),
        ]);
        expect(answers.filter((a) => a.acquired), name).toHaveLength(1);
        const winner = answers.find((a) => a.acquired) as { token: number };
        const loser = answers.find((a) => !a.acquired) as { owner: string; expiresAt: number };
        expect(loser.expiresAt).toBe(T0 + 1000);
        expect((await store.leaseGet({ name }))).toEqual({ name, owner: loser.owner, token: winner.token, expiresAt: T0 + 1000 });
      }
    });
  });
}
