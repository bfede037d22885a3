import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../../src/errors.js';
import { jobTimeline } from '../../src/job/timeline.js';
import { NEVER, type ClaimedJob } from '../../src/job/types.js';
import { jobView } from '../../src/job/view.js';
import type { Store } from '../../src/store/store.js';
import { until } from '../helpers/events.js';
import { claim, claimOne, get, insert, ms, running, T0, takeover, type Harness } from './harness.js';

/** A message wait's StoredWait as jobRelease takes it (JSON text). */
const messageWait = (topic: string, until: number) => JSON.stringify({ kind: 'message', topic, until });

/** The lease of a claimed job, as jobRelease takes it. */
const lease = (job: ClaimedJob) => [{ id: job.id, token: job.leaseToken }];

/** Sends `payload` on `topic` to job `id` (no idempotency key) at `now`. */
function send(store: Store, id: number, topic: string, payload: string, now: number) {
  return store.jobMessageSend({ target: { id }, topic, payload, idempotencyKey: null, now });
}

/** `jobMessageTake` for the running `job` at step identity `step` (seq 1 unless told), with no deadline unless told. */
function take(store: Store, job: ClaimedJob, topic: string, step: string, now: number, options: { until?: number; seq?: number; token?: number } = {}) {
  return store.jobMessageTake({ id: job.id, token: options.token ?? job.leaseToken, topic, step, seq: options.seq ?? 1, attempt: job.attempt, until: options.until ?? NEVER, now });
}

/** Suspends the running `job` on a receive of `topic` until `until`, at `now`. */
function suspend(store: Store, job: ClaimedJob, topic: string, until: number, now: number) {
  return store.jobSuspend({ items: [{ id: job.id, token: job.leaseToken, runAt: until, wait: messageWait(topic, until) }], now });
}

/** A job's mailbox (migration 22): jobMessageSend/jobMessageTake, and the receive that suspends its run (a jobSuspend woken by a send). */
export function messageTests(h: Harness): void {
  describe('jobMessageSend', () => {
    it('sends by id to a queued or running job, and by key to the queued or running job holding it; each send stores one message', async () => {
      const { store } = await h.setup();
      const queued = await insert(store, { task: 'q' });
      const busy = await running(store, { task: 'r' });
      const keyedQueued = await insert(store, { task: 'kq', key: 'k-queued' });
      const keyedBusy = await running(store, { task: 'kr', key: 'k-running' });

      const sent = [
        await send(store, queued.id, 't', '{"to":"queued"}', T0 + 1),
        await send(store, busy.id, 't', '{"to":"running"}', T0 + 2),
        await store.jobMessageSend({ target: { key: 'k-queued' }, topic: 't', payload: '{"to":"keyed queued"}', idempotencyKey: null, now: T0 + 3 }),
        await store.jobMessageSend({ target: { key: 'k-running' }, topic: 't', payload: '{"to":"keyed running"}', idempotencyKey: null, now: T0 + 4 }),
      ];
      expect(sent.map((s) => [s.jobId, s.created])).toEqual([[queued.id, true], [busy.id, true], [keyedQueued.id, true], [keyedBusy.id, true]]);
      const ids = sent.map((s) => s.messageId);
      expect(new Set(ids).size).toBe(4);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);

      // What was sent is what a receive takes.
      expect(await take(store, busy, 't', 'r', T0 + 10)).toEqual({ payload: '{"to":"running"}' });
      expect(await take(store, keyedBusy, 't', 'r', T0 + 10)).toEqual({ payload: '{"to":"keyed running"}' });
      const q = await claimOne(store, { tasks: ['q'], now: T0 + 10 });
      expect(await take(store, q, 't', 'r', T0 + 10)).toEqual({ payload: '{"to":"queued"}' });
      const kq = await claimOne(store, { tasks: ['kq'], now: T0 + 10 });
      expect(await take(store, kq, 't', 'r', T0 + 10)).toEqual({ payload: '{"to":"keyed queued"}' });
      // Sending does not change the job it goes to (it waits for nothing).
      expect(await get(store, busy.id)).toMatchObject({ state: 'running', wait: null });
    });

    it('NotFoundError for an unknown id, an unknown key, a key only a finished job holds', async () => {
      const { store } = await h.setup();
      const done = await running(store, { key: 'k-done' });
      await store.jobCompleteMany({ items: [{ id: done.id, token: done.leaseToken, result: '1' }], now: T0 + 10 });
      await expect(send(store, done.id + 1000, 't', '1', T0 + 20)).rejects.toBeInstanceOf(NotFoundError);
      for (const key of ['k-none', 'k-done']) {
        await expect(store.jobMessageSend({ target: { key }, topic: 't', payload: '1', idempotencyKey: null, now: T0 + 20 }), key).rejects.toBeInstanceOf(NotFoundError);
      }
    });

    it('ConflictError (with the state) for a completed, failed or cancelled job', async () => {
      const { store } = await h.setup();
      const completed = await running(store, { task: 'c' });
      await store.jobCompleteMany({ items: [{ id: completed.id, token: completed.leaseToken, result: '1' }], now: T0 + 10 });
      const failed = await running(store, { task: 'f' });
      await store.jobFail({ id: failed.id, token: failed.leaseToken, error: { attempt: 1, time: T0 + 10, message: 'x', stack: null }, retryAt: null, now: T0 + 10 });
      const cancelled = await insert(store, { task: 'x' });
      await store.jobCancel({ id: cancelled.id, reason: null, now: T0 + 10 });
      for (const [state, id] of [['completed', completed.id], ['failed', failed.id], ['cancelled', cancelled.id]] as const) {
        const error = await send(store, id, 't', '1', T0 + 20).then(() => null, (e: unknown) => e);
        expect(error, state).toBeInstanceOf(ConflictError);
        expect((error as ConflictError).state, state).toBe(state);
      }
    });

    it('an idempotency key sent twice stores one message: the second send returns created false and the first message id; per topic', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      const first = await store.jobMessageSend({ target: { id: job.id }, topic: 't', payload: '"first"', idempotencyKey: 'idem', now: T0 + 1 });
      const second = await store.jobMessageSend({ target: { id: job.id }, topic: 't', payload: '"second"', idempotencyKey: 'idem', now: T0 + 2 });
      expect(first).toEqual({ jobId: job.id, messageId: first.messageId, created: true });
      expect(second).toEqual({ jobId: job.id, messageId: first.messageId, created: false });
      // The same key on another topic is another message.
      const other = await store.jobMessageSend({ target: { id: job.id }, topic: 'u', payload: '"other topic"', idempotencyKey: 'idem', now: T0 + 3 });
      expect(other.created).toBe(true);
      expect(other.messageId).not.toBe(first.messageId);

      expect(await take(store, job, 't', 'r', T0 + 10)).toEqual({ payload: '"first"' });
      expect(await take(store, job, 't', 'r#2', T0 + 10, { seq: 2, until: T0 + 99 })).toEqual({ until: T0 + 99 });
      expect(await take(store, job, 'u', 'r#3', T0 + 10, { seq: 3 })).toEqual({ payload: '"other topic"' });
      // Still refused after the message was taken: the key stays used.
      expect(await store.jobMessageSend({ target: { id: job.id }, topic: 't', payload: '"third"', idempotencyKey: 'idem', now: T0 + 20 })).toEqual(second);
      // Without a key, every send is a message.
      const a = await send(store, job.id, 'v', '1', T0 + 30);
      const b = await send(store, job.id, 'v', '1', T0 + 30);
      expect([a.created, b.created]).toEqual([true, true]);
      expect(a.messageId).not.toBe(b.messageId);
    });
  });

  describe('jobMessageTake', () => {
    it('takes the oldest pending message of the topic, once, and stores the step completed with its payload', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      await send(store, job.id, 'other', '{"n":0}', T0 + 1);
      await send(store, job.id, 't', '{"n":1}', T0 + 2);
      await send(store, job.id, 't', '{"n":2}', T0 + 3);

      expect(await take(store, job, 't', 'receive', T0 + 100)).toEqual({ payload: '{"n":1}' });
      expect(await take(store, job, 't', 'receive#2', T0 + 200, { seq: 2 })).toEqual({ payload: '{"n":2}' });
      expect(await take(store, job, 't', 'receive#3', T0 + 300, { seq: 3, until: T0 + 9000 })).toEqual({ until: T0 + 9000 });
      expect(await store.jobStepList({ id: job.id })).toEqual([
        { name: 'receive', seq: 1, state: 'completed', attempt: 1, tries: 1, startedAt: T0 + 100, finishedAt: T0 + 100, result: '{"n":1}', error: null },
        { name: 'receive#2', seq: 2, state: 'completed', attempt: 1, tries: 1, startedAt: T0 + 200, finishedAt: T0 + 200, result: '{"n":2}', error: null },
        { name: 'receive#3', seq: 3, state: 'waiting', attempt: 1, tries: 1, startedAt: T0 + 300, finishedAt: null, result: String(T0 + 9000), error: null },
      ]);
      // The other topic's message is still there.
      expect(await take(store, job, 'other', 'o', T0 + 400, { seq: 4 })).toEqual({ payload: '{"n":0}' });
    });

    it('with none pending: a waiting step holding the first deadline, which later takes return; a message then completes it, started when the first take was', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      expect(await take(store, job, 't', 'receive', T0 + 100, { until: T0 + 5000 })).toEqual({ until: T0 + 5000 });
      expect(await take(store, job, 't', 'receive', T0 + 200, { until: T0 + 7000 })).toEqual({ until: T0 + 5000 });
      const waiting = { name: 'receive', seq: 1, state: 'waiting', attempt: 1, tries: 1, startedAt: T0 + 100, finishedAt: null, result: String(T0 + 5000), error: null };
      expect(await store.jobStepList({ id: job.id })).toEqual([waiting]);

      // Across a suspension: the next attempt's take still gets the first deadline.
      expect(await suspend(store, job, 't', T0 + 5000, T0 + 300)).toEqual([job.id]);
      const again = await claimOne(store, { now: T0 + 5000 });
      expect(await take(store, again, 't', 'receive', T0 + 5000, { until: NEVER })).toEqual({ until: T0 + 5000 });
      expect(await store.jobStepList({ id: job.id })).toEqual([waiting]);

      await send(store, job.id, 't', '"late"', T0 + 5001);
      expect(await take(store, again, 't', 'receive', T0 + 5002, { until: T0 + 5000 })).toEqual({ payload: '"late"' });
      expect(await store.jobStepList({ id: job.id })).toEqual([{ ...waiting, state: 'completed', finishedAt: T0 + 5002, result: '"late"' }]);
    });

    it('refused with a stale token: false, the message left pending and no step written; the new holder takes it', async () => {
      const { store } = await h.setup();
      const { id, stale, before, at } = await takeover(store);
      await send(store, id, 't', '"m"', at + 1);
      expect(await take(store, before, 't', 'receive', at + 2, { token: stale })).toBe(false);
      expect(await take(store, before, 'none', 'receive#2', at + 2, { token: stale, until: at + 50 })).toBe(false);
      expect(await store.jobStepList({ id })).toEqual([]);
      expect(await take(store, before, 't', 'receive', at + 3)).toEqual({ payload: '"m"' });
      expect(await store.jobStepList({ id })).toMatchObject([{ name: 'receive', state: 'completed', result: '"m"', attempt: before.attempt }]);
    });

    it('refused once the job is no longer running under the token (completed, released): false, nothing taken', async () => {
      const { store } = await h.setup();
      const done = await running(store, { task: 'done' });
      await send(store, done.id, 't', '1', T0 + 1);
      await store.jobCompleteMany({ items: [{ id: done.id, token: done.leaseToken, result: '1' }], now: T0 + 2 });
      expect(await take(store, done, 't', 'receive', T0 + 3)).toBe(false);
      const released = await running(store, { task: 'released' });
      await send(store, released.id, 't', '2', T0 + 1);
      expect(await store.jobRelease({ leases: lease(released), now: T0 + 2 })).toEqual([released.id]);
      expect(await take(store, released, 't', 'receive', T0 + 3)).toBe(false);
      for (const id of [done.id, released.id]) expect(await store.jobStepList({ id })).toEqual([]);
      const next = await claimOne(store, { tasks: ['released'], now: T0 + 4 });
      expect(await take(store, next, 't', 'receive', T0 + 5)).toEqual({ payload: '2' });
    });
  });

  describe('jobSuspend (a receive)', () => {
    it('with no message pending: queued, due at the deadline, attempt not counted, a message wait, view waiting, a waiting event', async () => {
      const { store } = await h.setup();
      const job = await running(store, {}, { workerId: 'w1' });
      await send(store, job.id, 'other', '1', T0 + 10);
      const until = T0 + 60_000;
      expect(await suspend(store, job, 't', until, T0 + 100)).toEqual([job.id]);
      const stored = await get(store, job.id);
      expect(stored).toMatchObject({ state: 'queued', attempt: 0, leaseOwner: null, wait: { kind: 'message', topic: 't', until: new Date(until) } });
      expect(ms(stored.runAt)).toBe(until);
      expect(jobView(stored, T0 + 100)).toBe('waiting');
      const record = (await store.jobTimeline({ id: job.id }))!;
      expect(record.events).toEqual([
        { type: 'waiting', at: T0 + 100, runAt: until, wait: { kind: 'message', topic: 't', until }, attempt: 1, token: job.leaseToken, worker: 'w1', startedAt: T0 },
      ]);
      expect(jobTimeline(record)[2]).toMatchObject({ type: 'waiting', at: new Date(T0 + 100), attempt: 1, worker: 'w1', runAt: new Date(until), wait: 'message', topic: 't' });
      expect(await claim(store, { now: until - 1 })).toEqual([]);
    });

    it('due at once when a message on its topic was sent while it ran; a message already taken does not count', async () => {
      const { store } = await h.setup();
      const until = T0 + 60_000;
      const pending = await running(store, { task: 'pending' });
      await send(store, pending.id, 't', '"early"', T0 + 10);
      expect(await suspend(store, pending, 't', until, T0 + 100)).toEqual([pending.id]);
      const stored = await get(store, pending.id);
      expect(stored).toMatchObject({ state: 'queued', wait: { kind: 'message', topic: 't' } });
      expect(ms(stored.runAt)).toBe(T0 + 100);
      expect((await store.jobTimeline({ id: pending.id }))!.events).toMatchObject([{ type: 'waiting', runAt: T0 + 100 }]);
      const resumed = await claimOne(store, { tasks: ['pending'], now: T0 + 100 });
      expect(await take(store, resumed, 't', 'receive', T0 + 101)).toEqual({ payload: '"early"' });

      const taken = await running(store, { task: 'taken' });
      await send(store, taken.id, 't', '"used"', T0 + 10);
      expect(await take(store, taken, 't', 'receive', T0 + 20)).toEqual({ payload: '"used"' });
      expect(await suspend(store, taken, 't', until, T0 + 100)).toEqual([taken.id]);
      expect(ms((await get(store, taken.id)).runAt)).toBe(until);
    });

    it('a send after the release makes it due now only for the topic it waits on; a sleeping or running job is not moved', async () => {
      const { store } = await h.setup();
      const until = T0 + 60_000;
      const job = await running(store, { task: 'recv' });
      expect(await suspend(store, job, 't', until, T0 + 100)).toEqual([job.id]);
      await send(store, job.id, 'u', '"wrong topic"', T0 + 200);
      expect(ms((await get(store, job.id)).runAt)).toBe(until);
      expect(await claim(store, { tasks: ['recv'], now: T0 + 200 })).toEqual([]);
      await send(store, job.id, 't', '"right topic"', T0 + 300);
      const woken = await get(store, job.id);
      expect(woken).toMatchObject({ state: 'queued', wait: { kind: 'message', topic: 't' } });
      expect(ms(woken.runAt)).toBe(T0 + 300);
      const resumed = await claimOne(store, { tasks: ['recv'], now: T0 + 300 });
      expect(resumed).toMatchObject({ id: job.id, attempt: 1 });
      expect(await take(store, resumed, 't', 'receive', T0 + 301)).toEqual({ payload: '"right topic"' });

      const sleeper = await running(store, { task: 'sleep' });
      expect(await store.jobSuspend({ items: [{ id: sleeper.id, token: sleeper.leaseToken, runAt: until, wait: JSON.stringify({ kind: 'sleep', until }) }], now: T0 + 100 })).toEqual([sleeper.id]);
      await send(store, sleeper.id, 't', '1', T0 + 300);
      expect(ms((await get(store, sleeper.id)).runAt)).toBe(until);

      const plain = await insert(store, { task: 'plain', runAt: until });
      await send(store, plain.id, 't', '1', T0 + 300);
      expect(ms((await get(store, plain.id)).runAt)).toBe(until);
    });

    it('a receive without a deadline (NEVER) sleeps until a message wakes it', async () => {
      const { store } = await h.setup();
      const job = await running(store);
      expect(await suspend(store, job, 't', NEVER, T0 + 100)).toEqual([job.id]);
      const stored = await get(store, job.id);
      expect(ms(stored.runAt)).toBe(NEVER);
      expect(stored.wait).toEqual({ kind: 'message', topic: 't', until: new Date(NEVER) });
      expect(await claim(store, { now: T0 + 86_400_000 * 365 })).toEqual([]);
      await send(store, job.id, 't', '1', T0 + 500);
      expect(ms((await get(store, job.id)).runAt)).toBe(T0 + 500);
    });

    it('a send racing the waiting release of the same job never leaves it asleep (50 rounds, two store instances)', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      const rounds = 50;
      const jobs = [];
      for (let i = 0; i < rounds; i++) jobs.push(await insert(store, { task: `race${i % 5}` }));
      const claimed = await claim(store, { tasks: ['race0', 'race1', 'race2', 'race3', 'race4'], limit: rounds });
      expect(claimed).toHaveLength(rounds);
      for (let i = 0; i < rounds; i++) {
        const job = claimed[i]!;
        const now = T0 + 1000 + i;
        const release = () => suspend(store, job, 't', NEVER, now);
        const sending = () => other.jobMessageSend({ target: { id: job.id }, topic: 't', payload: String(i), idempotencyKey: null, now });
        // Alternate which call starts first.
        const [released, sent] = i % 2 === 0
          ? await Promise.all([release(), sending()])
          : await Promise.all([sending(), release()]).then(([s, r]) => [r, s] as const);
        expect(released, `round ${i}`).toEqual([job.id]);
        expect(sent.created, `round ${i}`).toBe(true);
        const after = await get(store, job.id);
        expect(after.state, `round ${i}`).toBe('queued');
        expect(ms(after.runAt), `round ${i}: the job is due now, not asleep`).toBe(now);
      }
    });
  });

  describe('finishedListen / finishedUnlisten', () => {
    it('while a waiter is registered, the change watch names the jobs that finish (PostgreSQL: NOTIFY); unregistered, nothing is sent; SQLite needs no registration', async () => {
      const { store } = await h.setup();
      const seen: Array<number[] | undefined> = [];
      const off = store.watchChanges({ intervalMs: 20, listener: (change) => seen.push(change?.finished) });
      try {
        // PostgreSQL calls the listener once, without a change, when its LISTEN is up: from then on no NOTIFY is lost.
        if (store.driver === 'postgres') await until(() => (seen.length > 0 ? true : undefined), 'the LISTEN connection up');
        const first = await running(store);
        await store.finishedListen({ owner: 'w1', ttlMs: 60_000, now: Date.now() });
        expect((await store.jobCompleteMany({ items: [{ id: first.id, token: first.leaseToken, result: '1' }], now: Date.now() })).completed).toEqual([first.id]);
        if (store.driver === 'postgres') {
          await until(() => (seen.some((f) => f?.includes(first.id)) ? true : undefined), 'a finished notification naming the job');
          await store.finishedUnlisten({ owner: 'w1' });
          await store.finishedUnlisten({ owner: 'w1' }); // a second time: a no-op
          seen.length = 0;
          const second = await running(store);
          await store.jobCompleteMany({ items: [{ id: second.id, token: second.leaseToken, result: '2' }], now: Date.now() });
          // A marker after it: once the marker's notification arrived, the completion's would have too.
          const marker = await running(store);
          await store.finishedListen({ owner: 'w2', ttlMs: 60_000, now: Date.now() });
          await store.jobCompleteMany({ items: [{ id: marker.id, token: marker.leaseToken, result: '3' }], now: Date.now() });
          await until(() => (seen.some((f) => f?.includes(marker.id)) ? true : undefined), 'the marker\'s notification');
          expect(seen.some((f) => f?.includes(second.id))).toBe(false);
          await store.finishedUnlisten({ owner: 'w2' });
        } else {
          await store.finishedUnlisten({ owner: 'w1' });
        }
      } finally {
        off();
      }
    });
  });
}
