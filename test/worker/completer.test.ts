/**
 * The worker's completion batcher (src/worker/completer.ts) on a real database: while a
 * claim is about to run (`combine` true) a flush leaves the completions for that claim;
 * `detach()` (the worker stopped claiming) writes what is pending at once and every
 * later completion by itself.
 */
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { systemClock } from '../../src/clock.js';
import { openStore } from '../../src/store/open.js';
import { Completer } from '../../src/worker/completer.js';
import { openBaton, tempDatabase, testLogger } from '../helpers/db.js';

/** Resolves after the event-loop turn that runs the completer's `setImmediate` flush. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

describe('Completer', () => {
  it('leaves completions to the coming claim while combine says so; detach() writes them, and later ones alone', async () => {
    const { url } = tempDatabase();
    const noop = defineTask('noop', { handler: async () => undefined });
    const baton = await openBaton({ database: url });
    await baton.enqueueMany([1, 2, 3].map((n) => ({ task: noop, payload: n })));
    const store = await openStore(url);
    try {
      const claimed = await store.jobClaim({ workerId: 'w', tasks: ['noop'], queues: ['default'], limit: 3, leaseMs: 60_000, now: Date.now() });
      expect(claimed).toHaveLength(3);
      let flushes = 0;
      const completer = new Completer(store, systemClock, testLogger(), () => (flushes++, true));
      const complete = (i: number) => completer.complete({ id: claimed[i]!.id, token: claimed[i]!.leaseToken, result: JSON.stringify(i) }, () => Infinity);

      const pending = [complete(0), complete(1)];
      await nextTurn();
      expect(flushes).toBe(1); // one flush for both, and it wrote nothing
      expect((await Promise.all(claimed.map((j) => baton.getJob(j.id)))).map((j) => j.state)).toEqual(['running', 'running', 'running']);

      completer.detach();
      expect(await Promise.all(pending)).toEqual([[], []]);
      // After detach no flush asks combine: the third is written by itself.
      expect(await complete(2)).toEqual([]);
      expect(flushes).toBe(1);
      expect((await Promise.all(claimed.map((j) => baton.getJob(j.id)))).map((j) => [j.state, j.result])).toEqual([['completed', 0], ['completed', 1], ['completed', 2]]);
    } finally {
      await store.close();
    }
  });

  it('take() hands the pending completions to the caller; settle() resolves each with its follow-ups when written, null when not', async () => {
    const { url } = tempDatabase();
    const noop = defineTask('noop', { handler: async () => undefined });
    const baton = await openBaton({ database: url });
    await baton.enqueueMany([1, 2].map((n) => ({ task: noop, payload: n })));
    const store = await openStore(url);
    try {
      const claimed = await store.jobClaim({ workerId: 'w', tasks: ['noop'], queues: ['default'], limit: 2, leaseMs: 60_000, now: Date.now() });
      const completer = new Completer(store, systemClock, testLogger(), () => true);
      const pending = claimed.map((j) => completer.complete({ id: j.id, token: j.leaseToken, result: 'null' }, () => Infinity));
      const taken = completer.take();
      expect(taken.items.map((i) => i.id)).toEqual(claimed.map((j) => j.id));
      // The caller's write completed only the first (the second's lease was lost).
      taken.settle({ completed: [claimed[0]!.id], enqueued: [] });
      expect(await Promise.all(pending)).toEqual([[], null]);
      // Nothing is left for a flush: detach writes nothing more.
      completer.detach();
      await nextTurn();
      expect((await Promise.all(claimed.map((j) => baton.getJob(j.id)))).map((j) => j.state)).toEqual(['running', 'running']);
    } finally {
      await store.close();
    }
  });
});
