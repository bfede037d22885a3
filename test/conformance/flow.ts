import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { claim, insert, running, T0, type Harness } from './harness.js';

/** Inserts `n` queued jobs of `queue` (task `t`). */
async function queued(store: Store, queue: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await insert(store, { queue });
}

/** Flow control (issue 12): fleet-wide queue concurrency limits, which jobClaim applies. */
export function flowTests(h: Harness): void {
  describe('queueSetConcurrency, queueListLimits', () => {
    it('sets, changes and clears a limit; says whether it changed; lists limited queues with their running jobs', async () => {
      const { store } = await h.setup();
      expect(await store.queueListLimits()).toEqual([]);
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: null, now: T0 })).toBe(false); // nothing to clear
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: 3, now: T0 })).toBe(true);
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: 3, now: T0 + 1 })).toBe(false);
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: 5, now: T0 + 2 })).toBe(true);
      await running(store, { queue: 'q' });
      await running(store, { queue: 'other' });
      expect(await store.queueListLimits()).toEqual([{ queue: 'q', concurrency: 5, running: 1 }]);
      // A limit and a pause live in one row: clearing one keeps the other.
      expect(await store.queueSetPaused({ name: 'q', paused: true, now: T0 + 3 })).toBe(true);
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: null, now: T0 + 4 })).toBe(true);
      expect(await store.queueListLimits()).toEqual([]);
      expect((await store.queueListPaused()).map((p) => p.queue)).toEqual(['q']);
    });
  });

  describe('priority (the documented bound: strict, no aging)', () => {
    it('a steady stream of priority-1 work keeps a priority-10 job waiting however long it waited; it starts at the first claim with no better job due', async () => {
      const { store } = await h.setup();
      const low = await insert(store, { priority: 10 });
      for (let i = 0; i < 100; i++) {
        await insert(store, { priority: 1 }, T0 + i);
        const [job] = await claim(store, { limit: 1, now: T0 + i });
        expect(job!.priority, `claim ${i}`).toBe(1);
      }
      await insert(store, { priority: 1, runAt: T0 + 10_000 }); // better, but not due: no reason to wait
      const [next] = await claim(store, { limit: 1, now: T0 + 200 });
      expect(next!.id).toBe(low.id);
    });
  });

  describe('jobClaim under a queue concurrency limit', () => {
    it('claims at most limit − running of a limited queue, in claim order, and the other queues as before in the same claim', async () => {
      const { store } = await h.setup();
      await store.queueSetConcurrency({ name: 'q', concurrency: 3, now: T0 });
      const first = await running(store, { queue: 'q' });
      await queued(store, 'q', 5);
      await queued(store, 'free', 4);
      const claimed = await claim(store, { queues: ['q', 'free'], limit: 10 });
      expect(claimed.filter((j) => j.queue === 'q')).toHaveLength(2);
      expect(claimed.filter((j) => j.queue === 'free')).toHaveLength(4);
      const q = claimed.filter((j) => j.queue === 'q').map((j) => j.id);
      expect(q).toEqual([...q].sort((a, b) => a - b)); // the oldest first
      // Full: nothing more of q until one ends.
      expect(await claim(store, { queues: ['q'], limit: 10 })).toEqual([]);
      await store.jobCompleteMany({ items: [{ id: first.id, token: first.leaseToken, result: 'null' }], now: T0 + 1 });
      expect(await claim(store, { queues: ['q'], limit: 10 })).toHaveLength(1);
    });

    it('the limit counts priorities and every claimer: jobs of several priorities, limit 2 → the two best', async () => {
      const { store } = await h.setup();
      await store.queueSetConcurrency({ name: 'q', concurrency: 2, now: T0 });
      const low = await insert(store, { queue: 'q', priority: 5 });
      const high = await insert(store, { queue: 'q', priority: 1 });
      const mid = await insert(store, { queue: 'q', priority: 3 });
      expect(low.id).toBeLessThan(high.id);
      const claimed = await claim(store, { queues: ['q'], limit: 10, workerId: 'a' });
      expect(claimed.map((j) => j.id)).toEqual([high.id, mid.id]);
      expect(await claim(store, { queues: ['q'], limit: 10, workerId: 'b' })).toEqual([]);
    });

    it('concurrent claims from many store instances never take more than the limit together', async () => {
      const { store, another } = await h.setup();
      const others = await Promise.all(Array.from({ length: 5 }, () => another()));
      await store.queueSetConcurrency({ name: 'q', concurrency: 3, now: T0 });
      await queued(store, 'q', 40);
      for (let round = 0; round < 3; round++) {
        const batches = await Promise.all([store, ...others].flatMap((s, i) => [1, 2].map((n) => claim(s, { queues: ['q'], limit: 4, workerId: `w${i}-${n}` }))));
        expect(batches.flat(), `round ${round}`).toHaveLength(round === 0 ? 3 : 0);
      }
      expect(await store.queueListLimits()).toEqual([{ queue: 'q', concurrency: 3, running: 3 }]);
    });

    it('a limit lowered below the running jobs lets them run and starts nothing until the count is under it; a cleared limit claims freely', async () => {
      const { store } = await h.setup();
      await store.queueSetConcurrency({ name: 'q', concurrency: 3, now: T0 });
      await queued(store, 'q', 6);
      const three = await claim(store, { queues: ['q'], limit: 10 });
      expect(three).toHaveLength(3);
      await store.queueSetConcurrency({ name: 'q', concurrency: 1, now: T0 + 1 });
      await store.jobCompleteMany({ items: three.slice(0, 2).map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })), now: T0 + 2 });
      expect(await claim(store, { queues: ['q'], limit: 10 })).toEqual([]); // 1 running = the limit
      await store.queueSetConcurrency({ name: 'q', concurrency: null, now: T0 + 3 });
      expect(await claim(store, { queues: ['q'], limit: 10 })).toHaveLength(3);
    });
  });
}
