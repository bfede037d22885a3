import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { claim, insert, newJob, T0, type Harness } from './harness.js';

/** Inserts `n` queued jobs of queue `q` (key `key` when given), due at T0. */
async function queued(store: Store, n: number, key: string | null = null): Promise<void> {
  const jobs = Array.from({ length: n }, () => newJob({ queue: 'q', concurrencyKey: key, concurrencyLimit: null }));
  await store.jobInsertMany({ jobs, now: T0 });
}

/** Claims of queue `q` at `now` (T0 + ms), as many as it gives, up to `limit`. */
const claimAt = (store: Store, ms: number, limit = 50) => claim(store, { queues: ['q'], limit, now: T0 + ms });

/** Rate limits (issue 12): at most `limit` starts per sliding window of `periodMs`, per queue or per key. */
export function rateTests(h: Harness): void {
  describe('queueSetRateLimit, queueListRateLimits', () => {
    it('sets, changes and clears each scope apart; says whether it changed; lists rates with their window', async () => {
      const { store } = await h.setup();
      expect(await store.queueListRateLimits({ now: T0 })).toEqual([]);
      expect(await store.queueSetRateLimit({ name: 'q', perKey: false, rate: null, now: T0 })).toBe(false);
      expect(await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 3, periodMs: 1000 }, now: T0 })).toBe(true);
      expect(await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 3, periodMs: 1000 }, now: T0 })).toBe(false);
      expect(await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 3, periodMs: 2000 }, now: T0 })).toBe(true);
      expect(await store.queueSetRateLimit({ name: 'q', perKey: true, rate: { limit: 1, periodMs: 500 }, now: T0 })).toBe(true);
      expect(await store.queueListRateLimits({ now: T0 })).toEqual([
        { queue: 'q', perKey: false, limit: 3, periodMs: 2000, used: 0, nextAt: null },
        { queue: 'q', perKey: true, limit: 1, periodMs: 500, used: 0, nextAt: null },
      ]);
      expect(await store.queueListRateLimits({ now: T0, queues: ['other'] })).toEqual([]);
      // A rate and a concurrency limit live in one row: clearing one keeps the others.
      await store.queueSetConcurrency({ name: 'q', concurrency: 4, now: T0 });
      expect(await store.queueSetRateLimit({ name: 'q', perKey: false, rate: null, now: T0 })).toBe(true);
      expect((await store.queueListRateLimits({ now: T0 })).map((r) => r.perKey)).toEqual([true]);
      expect(await store.queueListLimits()).toEqual([{ queue: 'q', concurrency: 4, running: 0 }]);
    });
  });

  describe('jobClaim under a queue rate limit', () => {
    it('starts at most limit jobs in any window of the period: the next start waits until the oldest leaves the window', async () => {
      const { store } = await h.setup();
      await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 3, periodMs: 1000 }, now: T0 });
      await queued(store, 10);
      expect(await claimAt(store, 0, 2)).toHaveLength(2);
      expect(await claimAt(store, 400)).toHaveLength(1);
      expect(await claimAt(store, 500)).toHaveLength(0);
      expect(await store.queueListRateLimits({ now: T0 + 500 })).toEqual([{ queue: 'q', perKey: false, limit: 3, periodMs: 1000, used: 3, nextAt: T0 + 1000 }]);
      // A start at s leaves the window at s + period: at T0 + 999 the two of T0 still count.
      expect(await claimAt(store, 999)).toHaveLength(0);
      expect(await claimAt(store, 1000)).toHaveLength(2);
      expect(await claimAt(store, 1399)).toHaveLength(0);
      expect(await claimAt(store, 1400)).toHaveLength(1);
    });

    it('counts starts whatever happened to the jobs since: completing them frees no place in the window', async () => {
      const { store } = await h.setup();
      await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 2, periodMs: 60_000 }, now: T0 });
      await queued(store, 5);
      const two = await claimAt(store, 0);
      await store.jobCompleteMany({ items: two.map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })), now: T0 + 1 });
      expect(await claimAt(store, 2)).toHaveLength(0);
      expect(await claimAt(store, 60_000)).toHaveLength(2);
    });

    it('applies with a concurrency limit as the lesser room, and leaves other queues of the same claim alone', async () => {
      const { store } = await h.setup();
      await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 5, periodMs: 1000 }, now: T0 });
      await store.queueSetConcurrency({ name: 'q', concurrency: 2, now: T0 });
      await queued(store, 10);
      for (let i = 0; i < 4; i++) await insert(store, { queue: 'free' });
      const claimed = await claim(store, { queues: ['q', 'free'], limit: 20, now: T0 });
      expect(claimed.filter((j) => j.queue === 'q')).toHaveLength(2);
      expect(claimed.filter((j) => j.queue === 'free')).toHaveLength(4);
      await store.queueSetConcurrency({ name: 'q', concurrency: null, now: T0 });
      expect(await claimAt(store, 1)).toHaveLength(3); // 5 per second, 2 used
    });

    it('concurrent claims from many store instances never start more than the rate together', async () => {
      const { store, another } = await h.setup();
      const others = await Promise.all(Array.from({ length: 5 }, () => another()));
      await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 7, periodMs: 1000 }, now: T0 });
      await queued(store, 60);
      for (const at of [0, 500, 1000, 1500]) {
        const batches = await Promise.all([store, ...others].flatMap((s, i) => [1, 2].map((n) => claim(s, { queues: ['q'], limit: 4, workerId: `w${i}-${n}`, now: T0 + at }))));
        expect(batches.flat(), `claims at T0 + ${at}`).toHaveLength(at === 0 || at === 1000 ? 7 : 0);
      }
    });
  });

  describe('jobClaim under a per-key rate limit', () => {
    it('bounds each key apart and leaves unkeyed jobs alone; lists the busiest key and when the first full key frees', async () => {
      const { store } = await h.setup();
      await store.queueSetRateLimit({ name: 'q', perKey: true, rate: { limit: 2, periodMs: 1000 }, now: T0 });
      await queued(store, 5, 'a');
      await queued(store, 5, 'b');
      await queued(store, 3);
      const first = await claimAt(store, 0);
      expect(first.filter((j) => j.concurrencyKey === 'a')).toHaveLength(2);
      expect(first.filter((j) => j.concurrencyKey === 'b')).toHaveLength(2);
      expect(first.filter((j) => j.concurrencyKey === null)).toHaveLength(3);
      expect(await claimAt(store, 10)).toEqual([]);
      expect(await store.queueListRateLimits({ now: T0 + 10 })).toEqual([{ queue: 'q', perKey: true, limit: 2, periodMs: 1000, used: 2, nextAt: T0 + 1000 }]);
      expect(await claimAt(store, 1000)).toHaveLength(4);
    });

    it('concurrent claims never start more of one key than its rate', async () => {
      const { store, another } = await h.setup();
      const others = await Promise.all(Array.from({ length: 3 }, () => another()));
      await store.queueSetRateLimit({ name: 'q', perKey: true, rate: { limit: 3, periodMs: 1000 }, now: T0 });
      for (const key of ['a', 'b', 'c']) await queued(store, 12, key);
      // Each window: two rounds of concurrent claims (a claim passes over a key another
      // holds, so they may take less than the rate together, never more), then one claim
      // that tops every key up to exactly its rate.
      for (const window of [0, 1000]) {
        const claimed = [];
        for (const at of [window, window + 1]) {
          claimed.push(...(await Promise.all([store, ...others].map((s, i) => claim(s, { queues: ['q'], limit: 5, workerId: `w${i}`, now: T0 + at })))).flat());
        }
        claimed.push(...(await claim(store, { queues: ['q'], limit: 50, now: T0 + window + 2 })));
        for (const key of ['a', 'b', 'c']) expect(claimed.filter((j) => j.concurrencyKey === key), `key ${key} in the window at T0 + ${window}`).toHaveLength(3);
      }
    });
  });

  describe('rateStartsPrune', () => {
    it('deletes in batches only the starts no window counts any more', async () => {
      const { store } = await h.setup();
      await store.queueSetRateLimit({ name: 'q', perKey: false, rate: { limit: 10, periodMs: 1000 }, now: T0 });
      await queued(store, 8);
      expect(await claimAt(store, 0, 5)).toHaveLength(5);
      expect(await claimAt(store, 600, 3)).toHaveLength(3);
      expect(await store.rateStartsPrune({ now: T0 + 999, limit: 100 })).toBe(0);
      expect(await store.rateStartsPrune({ now: T0 + 1000, limit: 2 })).toBe(2);
      expect(await store.rateStartsPrune({ now: T0 + 1000, limit: 100 })).toBe(3);
      expect((await store.queueListRateLimits({ now: T0 + 1000 }))[0]!.used).toBe(3);
      // Without a rate no window counts them: all go.
      await store.queueSetRateLimit({ name: 'q', perKey: false, rate: null, now: T0 + 1000 });
      expect(await store.rateStartsPrune({ now: T0 + 1000, limit: 100 })).toBe(3);
    });
  });
}
