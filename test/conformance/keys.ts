import { describe, expect, it } from 'vitest';
import type { ClaimedJob } from '../../src/job/types.js';
import type { NewJob, Store } from '../../src/store/store.js';
import { claim, insert, newJob, T0, type Harness } from './harness.js';

/** Inserts `n` queued jobs of key `key` (queue `q` unless told) in one call, oldest first. */
async function keyed(store: Store, key: string, n: number, overrides: Partial<NewJob> = {}, now = T0) {
  const jobs = Array.from({ length: n }, () => newJob({ queue: 'q', concurrencyKey: key, concurrencyLimit: null, ...overrides }));
  return (await store.jobInsertMany({ jobs, now })).map((i) => i.job);
}

/** Completes running jobs. */
async function complete(store: Store, jobs: ClaimedJob[], now = T0 + 1) {
  await store.jobCompleteMany({ items: jobs.map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })), now });
}

/** Concurrency keys (issue 12): per-key limits, turns between keys, strategies, the per-key counts. */
export function keyTests(h: Harness): void {
  describe('jobClaim with concurrency keys', () => {
    it('claims at most the key\'s limit of its jobs, the oldest first, and other keys and unkeyed jobs in the same claim', async () => {
      const { store } = await h.setup();
      const a = await keyed(store, 'a', 4, { concurrencyLimit: 2 });
      await keyed(store, 'b', 1, { concurrencyLimit: 2 });
      const plain = await insert(store, { queue: 'q' });
      const claimed = await claim(store, { queues: ['q'], limit: 10 });
      expect(claimed.filter((j) => j.concurrencyKey === 'a').map((j) => j.id)).toEqual([a[0]!.id, a[1]!.id]);
      expect(claimed.filter((j) => j.concurrencyKey === 'b')).toHaveLength(1);
      expect(claimed.map((j) => j.id)).toContain(plain.id);
      expect(await claim(store, { queues: ['q'], limit: 10 })).toEqual([]); // a is full, the rest ran
      await complete(store, claimed.filter((j) => j.id === a[0]!.id));
      expect((await claim(store, { queues: ['q'], limit: 10 })).map((j) => j.id)).toEqual([a[2]!.id]);
    });

    it('takes a key\'s limit as its latest enqueue set it, with some of its jobs already running', async () => {
      const { store } = await h.setup();
      const a = await keyed(store, 'a', 2, { concurrencyLimit: 1 });
      expect((await claim(store, { queues: ['q'], limit: 10 })).map((j) => j.id)).toEqual([a[0]!.id]);
      const more = await keyed(store, 'a', 2, { concurrencyLimit: 3 }); // raises the key's limit to 3
      const claimed = await claim(store, { queues: ['q'], limit: 10 });
      expect(claimed.map((j) => j.id)).toEqual([a[1]!.id, more[0]!.id]); // 1 running + 2 = the new limit
      expect(await claim(store, { queues: ['q'], limit: 10 })).toEqual([]);
    });

    it('claims of many keys, one after another, each take only what the keys have room for and leave the rest claimable', async () => {
      const { store } = await h.setup();
      for (const key of ['a', 'b', 'c']) await keyed(store, key, 5, { concurrencyLimit: 2 });
      const first = await claim(store, { queues: ['q'], limit: 4 });
      const second = await claim(store, { queues: ['q'], limit: 10 });
      const all = [...first, ...second];
      expect(all).toHaveLength(6);
      for (const key of ['a', 'b', 'c']) expect(all.filter((j) => j.concurrencyKey === key)).toHaveLength(2);
      expect(await claim(store, { queues: ['q'], limit: 10 })).toEqual([]);
    });

    it('keeps per-key counts that follow every change of state, and drops a key with no live job', async () => {
      const { store } = await h.setup();
      await keyed(store, 'a', 3, { concurrencyLimit: 2 });
      await keyed(store, 'b', 1);
      expect(await store.concurrencyKeyList({ limit: 10 })).toEqual([
        { queue: 'q', key: 'a', queued: 3, running: 0, limit: 2 },
        { queue: 'q', key: 'b', queued: 1, running: 0, limit: null },
      ]);
      const [first, second, b] = await claim(store, { queues: ['q'], limit: 3 });
      expect(await store.concurrencyKeyList({ queue: 'q', limit: 10 })).toEqual([
        { queue: 'q', key: 'a', queued: 1, running: 2, limit: 2 },
        { queue: 'q', key: 'b', queued: 0, running: 1, limit: null },
      ]);
      expect(await store.concurrencyKeyList({ queue: 'other', limit: 10 })).toEqual([]);
      // fail with a retry (→ queued), release (→ queued), fail for good, complete
      const running = [first!, second!, b!].sort((x, y) => x.id - y.id);
      const byKey = running.filter((j) => j.concurrencyKey === 'a');
      await store.jobFail({ id: byKey[0]!.id, token: byKey[0]!.leaseToken, error: { attempt: 1, time: T0, message: 'x', stack: null }, retryAt: T0, now: T0 });
      await store.jobRelease({ leases: [{ id: byKey[1]!.id, token: byKey[1]!.leaseToken }], now: T0 });
      expect((await store.concurrencyKeyList({ limit: 10 })).find((k) => k.key === 'a')).toEqual({ queue: 'q', key: 'a', queued: 3, running: 0, limit: 2 });
      await complete(store, running.filter((j) => j.concurrencyKey === 'b'));
      expect((await store.concurrencyKeyList({ limit: 10 })).map((k) => k.key)).toEqual(['a']);
      // cancel every queued job of a, then a's row is gone too; a retry brings it back
      const ids = (await store.jobList({ state: 'queued', limit: 10 })).map((j) => j.id);
      for (const id of ids) await store.jobCancel({ id, reason: null, now: T0 + 2 });
      expect(await store.concurrencyKeyList({ limit: 10 })).toEqual([]);
      await store.jobRetry({ id: ids[0]!, now: T0 + 3 });
      expect(await store.concurrencyKeyList({ limit: 10 })).toEqual([{ queue: 'q', key: 'a', queued: 1, running: 0, limit: 2 }]);
    });

    it('keys take turns: 2,000 jobs of key A, then 5 of key B, two slots — B\'s five start within the first 12 starts', async () => {
      const { store } = await h.setup();
      await keyed(store, 'A', 2000);
      await keyed(store, 'B', 5);
      const starts: string[] = [];
      let now = T0;
      let held = await claim(store, { queues: ['q'], limit: 2, now });
      starts.push(...held.map((j) => j.concurrencyKey!));
      while (starts.length < 12) {
        // the oldest running job ends; its slot is claimed again
        const [done, ...rest] = held;
        await complete(store, [done!], ++now);
        const next = await claim(store, { queues: ['q'], limit: 1, now: ++now });
        starts.push(...next.map((j) => j.concurrencyKey!));
        held = [...rest, ...next];
      }
      expect(starts.filter((k) => k === 'B')).toHaveLength(5);
    });

    it('within a key: priority, then run_at; a key whose jobs are not due yet does not take a turn from one that is due', async () => {
      const { store } = await h.setup();
      const [late] = await keyed(store, 'a', 1, { priority: 5 });
      const [urgent] = await keyed(store, 'a', 1, { priority: 1 });
      await keyed(store, 'later', 3, { runAt: T0 + 60_000 });
      const claimed = await claim(store, { queues: ['q'], limit: 1 });
      expect(claimed.map((j) => j.id)).toEqual([urgent!.id]);
      expect((await claim(store, { queues: ['q'], limit: 5 })).map((j) => j.id)).toEqual([late!.id]);
      expect(await claim(store, { queues: ['q'], limit: 5 })).toEqual([]);
      expect(await claim(store, { queues: ['q'], limit: 5, now: T0 + 60_000 })).toHaveLength(3);
    });

    it('a paused queue\'s keyed jobs wait; a served task filter and a queue limit apply to keyed jobs too', async () => {
      const { store } = await h.setup();
      await keyed(store, 'a', 3);
      await keyed(store, 'b', 3, { task: 'other' });
      await store.queueSetPaused({ name: 'q', paused: true, now: T0 });
      expect(await claim(store, { queues: ['q'], limit: 10 })).toEqual([]);
      await store.queueSetPaused({ name: 'q', paused: false, now: T0 });
      await store.queueSetConcurrency({ name: 'q', concurrency: 2, now: T0 });
      const claimed = await claim(store, { queues: ['q'], tasks: ['t'], limit: 10 });
      expect(claimed.map((j) => j.concurrencyKey)).toEqual(['a', 'a']);
      expect(await claim(store, { queues: ['q'], tasks: ['other'], limit: 10 })).toEqual([]); // the queue is full
    });

    it('concurrent claims from many store instances never run more of a key than its limit', async () => {
      const { store, another } = await h.setup();
      const others = await Promise.all(Array.from({ length: 5 }, () => another()));
      for (const key of ['a', 'b', 'c', 'd']) await keyed(store, key, 10, { concurrencyLimit: 2 });
      for (let round = 0; round < 3; round++) {
        const batches = await Promise.all([store, ...others].flatMap((s, i) => [1, 2].map((n) => claim(s, { queues: ['q'], limit: 3, workerId: `w${i}-${n}` }))));
        const claimed = batches.flat();
        const keys = await store.concurrencyKeyList({ limit: 10 });
        for (const k of keys) expect(k.running, `round ${round}, key ${k.key}`).toBeLessThanOrEqual(2);
        // what the claims returned agrees with the counts: 2 of each key in the first round, none after
        expect(claimed, `round ${round}`).toHaveLength(round === 0 ? 8 : 0);
      }
      const live = await store.jobList({ state: 'running', limit: 100 });
      expect(live).toHaveLength(8);
    });

    it('counts stay exact when one statement ends the jobs of many keys, concurrently with claims and other batches over the same keys', async () => {
      const { store, another } = await h.setup();
      const others = await Promise.all([another(), another()]);
      const keys = Array.from({ length: 30 }, (_, i) => `k${i}`);
      for (const key of keys) await keyed(store, key, 6, { concurrencyLimit: 2 });
      /** The counts as the jobs themselves give them, and as the store keeps them, both by key. */
      const byName = <T extends { key: string }>(rows: T[]) => rows.sort((x, y) => (x.key < y.key ? -1 : 1));
      const counted = async () => byName(await store.concurrencyKeyList({ limit: 1000 }));
      const fromJobs = async () => {
        const live = [...(await store.jobList({ state: 'queued', limit: 1000 })), ...(await store.jobList({ state: 'running', limit: 1000 }))];
        const byKey = new Map<string, { queue: string; key: string; queued: number; running: number; limit: number | null }>();
        for (const j of live) {
          const row = byKey.get(j.concurrencyKey!) ?? { queue: 'q', key: j.concurrencyKey!, queued: 0, running: 0, limit: 2 };
          if (j.state === 'queued') row.queued++;
          else row.running++;
          byKey.set(row.key, row);
        }
        return byName([...byKey.values()]);
      };
      let now = T0;
      const stillRunning: ClaimedJob[] = [];
      for (let round = 0; round < 2; round++) {
        const held = (await Promise.all([store, ...others].map((s, i) => claim(s, { queues: ['q'], limit: 25, workerId: `w${i}`, now: ++now })))).flat();
        // two batches over many keys, in opposite orders, land together with a third claim
        const evens = held.filter((_, i) => i % 2 === 0);
        const odds = held.filter((_, i) => i % 2 === 1).reverse();
        now += 1;
        const [, , late] = await Promise.all([complete(others[0]!, evens, now), complete(others[1]!, odds, now), claim(store, { queues: ['q'], limit: 5, workerId: 'late', now })]);
        stillRunning.push(...late);
        expect(await counted(), `round ${round}`).toEqual(await fromJobs());
      }
      // some of the rest start; the queued rest is cancelled in one call, the running rest completed in one batch
      stillRunning.push(...(await claim(store, { queues: ['q'], limit: 20, workerId: 'last', now: ++now })));
      expect(await counted()).toEqual(await fromJobs());
      const queued = await store.jobList({ state: 'queued', limit: 1000 });
      expect(queued.length).toBeGreaterThan(0);
      await store.jobCancelMany({ ids: queued.map((j) => j.id), reason: 'done', now: ++now });
      expect(await counted()).toEqual(await fromJobs());
      expect(stillRunning.length).toBeGreaterThan(0);
      await complete(store, stillRunning, ++now);
      expect(await store.jobList({ state: 'running', limit: 1000 })).toEqual([]);
      expect(await store.concurrencyKeyList({ limit: 1000 })).toEqual([]);
    });
  });

  describe('concurrency strategies at insert', () => {
    const limited = (strategy: NewJob['concurrencyStrategy'], limit = 1): Partial<NewJob> => ({ concurrencyLimit: limit, concurrencyStrategy: strategy });

    it('cancelInProgress: the newest job of the key wins — an older running one gets a cancel request naming it, an older queued one ends cancelled', async () => {
      const { store } = await h.setup();
      const [old] = await keyed(store, 'doc', 1, limited('cancelInProgress'));
      const [runningOne] = await claim(store, { queues: ['q'], limit: 1 });
      expect(runningOne!.id).toBe(old!.id);
      const [waiting] = await keyed(store, 'doc', 1, limited('cancelInProgress'));
      expect((await store.jobGet({ id: old!.id }))!.cancelRequestedAt).not.toBeNull();
      expect((await store.jobGet({ id: old!.id }))!.cancelReason).toBe(`superseded by job ${waiting!.id} (concurrency key "doc", strategy cancelInProgress)`);
      expect(await store.jobCancelRequests({ ids: [old!.id] })).toEqual([{ id: old!.id, reason: expect.stringContaining('superseded') }]);
      const [newest] = await keyed(store, 'doc', 1, limited('cancelInProgress'));
      const earlier = (await store.jobGet({ id: waiting!.id }))!;
      expect(earlier.state).toBe('cancelled');
      expect(earlier.cancelReason).toBe(`superseded by job ${newest!.id} (concurrency key "doc", strategy cancelInProgress)`);
      expect((await store.jobGet({ id: newest!.id }))!.state).toBe('queued');
      // Other keys and other queues are untouched.
      const [other] = await keyed(store, 'other', 1, limited('cancelInProgress'));
      expect((await store.jobGet({ id: other!.id }))!.state).toBe('queued');
      expect((await store.jobGet({ id: newest!.id }))!.state).toBe('queued');
    });

    it('cancelInProgress with limit 2 keeps the two newest', async () => {
      const { store } = await h.setup();
      const jobs = [];
      for (let i = 0; i < 4; i++) jobs.push(...(await keyed(store, 'k', 1, limited('cancelInProgress', 2))));
      const states = await Promise.all(jobs.map(async (j) => (await store.jobGet({ id: j.id }))!.state));
      expect(states).toEqual(['cancelled', 'cancelled', 'queued', 'queued']);
    });

    it('cancelInProgress with limit 3: a new job keeps the two newest older jobs not being cancelled, running or queued, and cancels the rest; one already being cancelled takes no place', async () => {
      const { store } = await h.setup();
      const stateAndReason = async (id: number) => {
        const job = (await store.jobGet({ id }))!;
        return [job.state, job.cancelReason];
      };
      const [a, b] = await keyed(store, 'k', 2, limited('cancelInProgress', 3));
      expect((await claim(store, { queues: ['q'], limit: 2 })).map((j) => j.id)).toEqual([a!.id, b!.id]);
      await store.jobCancelMany({ ids: [b!.id], reason: 'by hand', now: T0 });
      const [c] = await keyed(store, 'k', 1, limited('cancelInProgress', 3));
      const [d] = await keyed(store, 'k', 1, limited('cancelInProgress', 3));
      // Kept for d: c and a (b, being cancelled, does not count).
      expect(await stateAndReason(a!.id)).toEqual(['running', null]);
      expect(await stateAndReason(b!.id)).toEqual(['running', 'by hand']);
      const [e] = await keyed(store, 'k', 1, limited('cancelInProgress', 3));
      // Kept for e: d and c; a, running, is asked to cancel; b keeps its own reason.
      expect(await stateAndReason(a!.id)).toEqual(['running', `superseded by job ${e!.id} (concurrency key "k", strategy cancelInProgress)`]);
      expect(await stateAndReason(b!.id)).toEqual(['running', 'by hand']);
      for (const job of [c!, d!, e!]) expect(await stateAndReason(job.id)).toEqual(['queued', null]);
    });

    it('keepLatest: a new job cancels the key\'s older queued jobs, in a batch too; running ones go on', async () => {
      const { store } = await h.setup();
      await keyed(store, 'k', 1, limited('keepLatest'));
      const [runningOne] = await claim(store, { queues: ['q'], limit: 1 });
      const batch = await keyed(store, 'k', 3, limited('keepLatest'));
      expect(batch.map((j) => j.state)).toEqual(['cancelled', 'cancelled', 'queued']); // what enqueue returns is the stored state
      expect(batch[0]!.cancelReason).toBe(`superseded by job ${batch[1]!.id} (concurrency key "k", strategy keepLatest)`);
      const still = (await store.jobGet({ id: runningOne!.id }))!;
      expect([still.state, still.cancelRequestedAt]).toEqual(['running', null]);
    });

    it('dropNewest: a new job of a key that already has its limit queued or running ends cancelled at once', async () => {
      const { store } = await h.setup();
      const [first] = await keyed(store, 'k', 1, limited('dropNewest', 2));
      await claim(store, { queues: ['q'], limit: 1 });
      const [second, third] = await keyed(store, 'k', 2, limited('dropNewest', 2));
      expect([first!.state, second!.state, third!.state]).toEqual(['queued', 'queued', 'cancelled']);
      expect(third!.cancelReason).toBe('dropped: concurrency key "k" already has 2 jobs queued or running (strategy dropNewest)');
      expect((await store.concurrencyKeyList({ limit: 10 }))[0]).toEqual({ queue: 'q', key: 'k', queued: 1, running: 1, limit: 2 });
    });
  });
}
