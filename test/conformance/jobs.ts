import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { claim, claimOne, get, insert, ms, newJob, T0, type Harness } from './harness.js';

/** Inserting and claiming jobs. */
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
        traceContext: null,
      });
      expect(ms(a!.runAt)).toBe(T0 + 60_000);
      expect(ms(a!.createdAt)).toBe(T0 - 1000);
      expect(b).toMatchObject({ queue: 'emails', payload: [1, 2], key: 'k-1' });
      expect(c!.payload).toBeNull();
      for (const job of [a, b, c]) expect(await store.jobGet({ id: job!.id })).toEqual(job);
    });

    it('returns each job exactly as jobGet reads it, key for key, for every kind of insert', async () => {
      const { store } = await h.setup();
      const trace = JSON.stringify({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
      await insert(store, { key: 'held' });
      const batches = [
        // No key, no strategy (PostgreSQL: one statement outside a transaction).
        [newJob({ payload: '{"a":[1,{"b":null}],"s":"é"}', priority: 3, runAt: T0 + 1234, maxAttempts: 5, timeoutMs: 100, traceContext: trace }),
          newJob({ payload: '"s"', concurrencyKey: 'ck', concurrencyLimit: 2 }), newJob({ traceContext: null, concurrencyKey: null, concurrencyLimit: null })],
        // Keys: one new, one held by a live job, one repeated within the batch.
        [newJob({ key: 'k1', traceContext: trace }), newJob({ key: 'held', payload: '[1]' }), newJob({ key: 'k1', task: 'dup' }), newJob({ payload: 'null' })],
        // A strategy: the older job of the key is cancelled, the batch read again.
        [newJob({ concurrencyKey: 'latest', concurrencyStrategy: 'keepLatest' }), newJob({ concurrencyKey: 'latest', concurrencyStrategy: 'keepLatest', concurrencyLimit: 1 })],
      ];
      for (const [i, jobs] of batches.entries()) {
        for (const { job } of await store.jobInsertMany({ jobs, now: T0 + i })) {
          const read = await get(store, job.id);
          expect(job).toStrictEqual(read);
          expect(Object.keys(job)).toEqual(Object.keys(read));
        }
      }
    });

    it('stores the trace context given (bulk and keyed inserts) and returns it on claim, after finishing and after a retry; none: null', async () => {
      const { store } = await h.setup();
      const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=a,other=b' };
      const text = JSON.stringify(trace);
      const inserted = await store.jobInsertMany({ jobs: [newJob({ traceContext: text }), newJob({ traceContext: text, key: 'k' }), newJob(), newJob({ traceContext: null })], now: T0 });
      expect(inserted.map((i) => i.job.traceContext)).toEqual([trace, trace, null, null]);
      const claimed = await claim(store, { limit: 4 });
      expect(claimed.map((j) => j.traceContext)).toEqual([trace, trace, null, null]);
      // Failed for good: on PostgreSQL the row moves to the finished table and keeps the column; a retry moves it back.
      const [first] = claimed;
      await store.jobFail({ id: first!.id, token: first!.leaseToken, error: { attempt: 1, time: T0 + 1, message: 'boom', stack: null }, retryAt: null, now: T0 + 1 });
      expect((await get(store, first!.id)).traceContext).toEqual(trace);
      expect((await store.jobRetry({ id: first!.id, now: T0 + 2 }))?.job.traceContext).toEqual(trace);
      expect((await claimOne(store, { now: T0 + 2 })).traceContext).toEqual(trace);
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

      expect((await store.jobCompleteMany({ items: [{ id: claimed.id, token: claimed.leaseToken, result: '1' }], now: T0 + 3 })).completed).toEqual([claimed.id]);
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

    it('claims in order priority, runAt, id across queues and priorities, past jobs not yet due in each of them', async () => {
      const { store } = await h.setup();
      // Per priority of each queue, due jobs interleaved with jobs not yet due (earlier
      // and later ids); one priority holds only jobs not yet due; queue "elsewhere" is not served.
      const spec: Array<[queue: string, priority: number, runAt: number]> = [
        ['q1', 5, T0 + 1], ['q1', 5, T0 - 30], ['q2', 5, T0 - 30], ['q1', 0, T0 + 60_000], ['q2', -2, T0 + 1],
        ['q1', 0, T0 - 10], ['q2', 0, T0 - 10], ['q1', 3, T0 + 5], ['q2', -2, T0], ['q1', 0, T0 - 10],
        ['elsewhere', -9, T0 - 99], ['q2', 5, T0 + 2], ['q1', 5, T0 - 40], ['q2', 7, T0 - 1],
      ];
      const ids = (await store.jobInsertMany({ jobs: spec.map(([queue, priority, runAt]) => newJob({ queue, priority, runAt })), now: T0 - 100 })).map((i) => i.job.id);
      const due = spec.map((s, i) => ({ queue: s[0], priority: s[1], runAt: s[2], id: ids[i]! })).filter((j) => j.queue !== 'elsewhere' && j.runAt <= T0);
      const expected = due.sort((a, b) => a.priority - b.priority || a.runAt - b.runAt || a.id - b.id).map((j) => j.id);
      const claimed: number[] = [];
      for (const limit of [1, 2, 3, 10]) claimed.push(...(await claim(store, { queues: ['q1', 'q2'], limit })).map((j) => j.id));
      expect(claimed).toEqual(expected);
      expect(await claim(store, { queues: ['q1', 'q2'] })).toEqual([]);
      // Later, the jobs not yet due are claimed in the same order.
      const rest = await claim(store, { queues: ['q1', 'q2'], limit: 100, now: T0 + 60_000 });
      expect(rest.map((j) => j.priority)).toEqual([-2, 0, 3, 5, 5]);
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

    it('a queue or task named twice claims as if named once', async () => {
      const { store } = await h.setup();
      await store.jobInsertMany({ jobs: Array.from({ length: 3 }, () => newJob()), now: T0 });
      const claimed = await claim(store, { queues: ['default', 'default'], tasks: ['t', 't'], limit: 3 });
      expect(claimed).toHaveLength(3);
      expect(new Set(claimed.map((j) => j.id)).size).toBe(3);
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

    it('claimsInFlight (≥ 1) claims of one worker on one store at once, with completions beside them: never the same job, each completion written once', async () => {
      const { store } = await h.setup();
      expect(Number.isInteger(store.claimsInFlight) && store.claimsInFlight >= 1).toBe(true);
      const ids = (await store.jobInsertMany({ jobs: Array.from({ length: 40 }, () => newJob()), now: T0 })).map((i) => i.job.id);
      const first = await claim(store, { limit: 4 });
      const lanes = Math.max(2, store.claimsInFlight);
      const rounds = await Promise.all([
        store.jobCompleteAndClaim({ items: first.slice(0, 2).map((j) => ({ id: j.id, token: j.leaseToken, result: '1' })), workerId: 'w1', tasks: ['t'], queues: ['default'], limit: 5, leaseMs: 30_000, now: T0 }),
        store.jobCompleteMany({ items: first.slice(2).map((j) => ({ id: j.id, token: j.leaseToken, result: '2' })), now: T0 }),
        ...Array.from({ length: lanes }, () => claim(store, { limit: 5 })),
      ]);
      const [withClaim, alone, ...claims] = rounds as [{ completed: number[]; claimed: { id: number }[] }, { completed: number[] }, ...{ id: number }[][]];
      const claimed = [...first, ...withClaim.claimed, ...claims.flat()].map((j) => j.id);
      expect(new Set(claimed).size).toBe(claimed.length);
      expect(claimed.length).toBe(Math.min(40, 4 + 5 + 5 * lanes));
      expect([...withClaim.completed, ...alone.completed].sort((a, b) => a - b)).toEqual(first.map((j) => j.id).sort((a, b) => a - b));
      for (const id of claimed) expect(ids).toContain(id);
    });
  });
}
