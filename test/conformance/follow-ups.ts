import { describe, expect, it } from 'vitest';
import type { NewJob } from '../../src/store/store.js';
import { claim, get, insert, ms, newJob, running, T0, takeover, type Harness } from './harness.js';

/** A follow-up of task `next` (payload `{ n }`), due at `runAt`. */
const followUp = (n: number, overrides: Partial<NewJob> = {}): NewJob => newJob({ task: 'next', payload: JSON.stringify({ n }), runAt: T0, ...overrides });

/** Jobs inserted with a completion (`Completion.enqueue`: ctx.enqueueOnComplete), in its transaction, only when it is written. */
export function followUpTests(h: Harness): void {
  describe('completion with follow-ups', () => {
    it('jobCompleteMany inserts the follow-ups of the items it completes, and none of an item whose lease was lost', async () => {
      const { store } = await h.setup();
      const { id: lostId, stale } = await takeover(store);
      const x = await running(store, { task: 'x' }, { now: T0 + 3000 });
      const y = await running(store, { task: 'y' }, { now: T0 + 3000 });
      const plain = await running(store, { task: 'z' }, { now: T0 + 3000 });
      const done = await store.jobCompleteMany({
        items: [
          { id: x.id, token: x.leaseToken, result: '1', enqueue: [followUp(1), followUp(2, { queue: 'later', priority: 5, runAt: T0 + 60_000 })] },
          { id: lostId, token: stale, result: '0', enqueue: [followUp(99)] },
          { id: plain.id, token: plain.leaseToken, result: '3' },
          { id: y.id, token: y.leaseToken, result: '2', enqueue: [followUp(3)] },
        ],
        now: T0 + 4000,
      });
      expect([...done.completed].sort((a, b) => a - b)).toEqual([x.id, y.id, plain.id]);
      expect(done.enqueued.map((e) => [e.id, e.jobs.map((j) => [j.created, j.job.payload])])).toEqual([
        [x.id, [[true, { n: 1 }], [true, { n: 2 }]]],
        [y.id, [[true, { n: 3 }]]],
      ]);
      // Stored as an enqueue stores them: queued, created at the completion's now, in call order.
      const [first, second] = done.enqueued[0]!.jobs.map((j) => j.job);
      expect(first!.id).toBeLessThan(second!.id);
      for (const { job } of done.enqueued.flatMap((e) => e.jobs)) {
        const stored = await get(store, job.id);
        expect(stored).toEqual(job);
        expect(stored).toMatchObject({ state: 'queued', task: 'next', attempt: 0 });
        expect(ms(stored.createdAt)).toBe(T0 + 4000);
      }
      expect(await get(store, second!.id)).toMatchObject({ queue: 'later', priority: 5 });
      expect(ms((await get(store, second!.id)).runAt)).toBe(T0 + 60_000);
      // The lost item's follow-up does not exist: only the three above are of task `next`.
      expect((await store.jobList({ task: 'next', limit: 10 })).map((j) => JSON.parse(j.payloadPreview.text))).toEqual([{ n: 3 }, { n: 2 }, { n: 1 }]);
      expect((await get(store, lostId)).state).toBe('running');
    });

    it('a completion refused by its stale token inserts nothing, in a batch alone too', async () => {
      const { store } = await h.setup();
      const { id, stale } = await takeover(store);
      expect(await store.jobCompleteMany({ items: [{ id, token: stale, result: '0', enqueue: [followUp(1)] }], now: T0 + 3000 })).toEqual({ completed: [], enqueued: [] });
      const none = await store.jobCompleteAndClaim({ items: [{ id, token: stale, result: '0', enqueue: [followUp(2)] }], workerId: 'w2', tasks: ['next'], queues: ['default'], limit: 5, leaseMs: 5000, now: T0 + 3001 });
      expect(none).toEqual({ completed: [], enqueued: [], claimed: [] });
      expect(await store.jobList({ task: 'next', limit: 10 })).toEqual([]);
      expect((await get(store, id)).state).toBe('running');
    });

    it('jobCompleteAndClaim inserts them before its claim, which may take a follow-up due now', async () => {
      const { store } = await h.setup();
      const x = await running(store, { task: 'x' });
      const { completed, enqueued, claimed } = await store.jobCompleteAndClaim({
        items: [{ id: x.id, token: x.leaseToken, result: 'null', enqueue: [followUp(1), followUp(2, { runAt: T0 + 60_000 })] }],
        workerId: 'w2', tasks: ['next'], queues: ['default'], limit: 5, leaseMs: 5000, now: T0 + 10,
      });
      expect(completed).toEqual([x.id]);
      const [due, later] = enqueued[0]!.jobs.map((j) => j.job);
      expect(claimed.map((j) => j.id)).toEqual([due!.id]);
      expect(claimed[0]).toMatchObject({ state: 'running', attempt: 1, leaseOwner: 'w2' });
      expect((await get(store, later!.id)).state).toBe('queued');
      expect((await get(store, x.id)).state).toBe('completed');
    });

    it('a follow-up whose key a queued or running job holds is that job (created false), not a new one', async () => {
      const { store } = await h.setup();
      const holder = await insert(store, { task: 'next', key: 'only-one' });
      const x = await running(store, { task: 'x' });
      const done = await store.jobCompleteMany({ items: [{ id: x.id, token: x.leaseToken, result: 'null', enqueue: [followUp(1, { key: 'only-one' }), followUp(2, { key: 'fresh' })] }], now: T0 + 10 });
      const [held, fresh] = done.enqueued[0]!.jobs;
      expect(held).toMatchObject({ created: false, job: { id: holder.id } });
      expect(fresh).toMatchObject({ created: true, job: { key: 'fresh' } });
      expect(await store.jobList({ task: 'next', limit: 10 })).toHaveLength(2);
    });

    it('fails as a whole when a follow-up cannot be inserted: the job is still running, nothing inserted', async () => {
      const { store } = await h.setup();
      const x = await running(store, { task: 'x' });
      const y = await running(store, { task: 'y' });
      const broken = followUp(2, { queue: null as unknown as string }); // NOT NULL
      const items = [{ id: x.id, token: x.leaseToken, result: '1', enqueue: [followUp(1)] }, { id: y.id, token: y.leaseToken, result: '2', enqueue: [broken] }];
      await expect(store.jobCompleteMany({ items, now: T0 + 10 })).rejects.toThrow();
      await expect(store.jobCompleteAndClaim({ items, workerId: 'w2', tasks: ['next'], queues: ['default'], limit: 5, leaseMs: 5000, now: T0 + 11 })).rejects.toThrow();
      for (const job of [x, y]) expect(await get(store, job.id)).toMatchObject({ state: 'running', leaseOwner: 'w1', result: null });
      expect(await store.jobList({ task: 'next', limit: 10 })).toEqual([]);
      // The same batch without the broken follow-up goes through.
      expect((await store.jobCompleteMany({ items: [items[0]!, { ...items[1]!, enqueue: [] }], now: T0 + 12 })).completed).toHaveLength(2);
      expect(await claim(store, { tasks: ['next'], now: T0 + 13 })).toHaveLength(1);
    });
  });
}
