/**
 * A worker's claims in flight at once (issue 33 item 3): up to the store's
 * `claimsInFlight` (PostgreSQL: the pool's size; SQLite: 1), a second one only under a
 * backlog (the last claim to end came back full), each reserving its room before it is
 * sent. Whatever overlaps, the slot accounting stays exact: never more handlers than
 * `concurrency`, never more jobs held than concurrency + prefetch, per queue never more
 * than its slots running and slots + prefetch held. claims-overlap.postgres.test.ts
 * shows two claims overlapping inside PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, type Baton } from 'baton-jobs';
import { openBaton, testDriver } from '../helpers/db.js';
import { collectEvents, until } from '../helpers/events.js';

/**
 * Counts the claims the worker sends (jobClaim and jobCompleteAndClaim): `started` so far
 * and the most in flight at once. While `hold` is on, each claim returns only when
 * `release()` is called (its statement has run: the jobs are claimed in the database).
 */
function watchClaims(baton: Baton) {
  const store = baton.store;
  const watch = { started: 0, inFlight: 0, most: 0, hold: false, release: () => undefined as void };
  let gate = Promise.resolve();
  const held = async <T>(call: () => Promise<T>): Promise<T> => {
    watch.started++;
    watch.most = Math.max(watch.most, ++watch.inFlight);
    const waitFor = watch.hold ? gate : undefined;
    try {
      const result = await call();
      await waitFor;
      return result;
    } finally {
      watch.inFlight--;
    }
  };
  const claim = store.jobClaim.bind(store);
  const completeAndClaim = store.jobCompleteAndClaim.bind(store);
  store.jobClaim = (params) => held(() => claim(params));
  store.jobCompleteAndClaim = (params) => held(() => completeAndClaim(params));
  return Object.assign(watch, {
    /** From now on claims wait for release(). */
    holdClaims() {
      watch.hold = true;
      gate = new Promise<void>((resolve) => (watch.release = () => {
        watch.hold = false;
        resolve();
      }));
    },
  });
}

/** Handlers that end after a few event-loop turns (0–6, by payload), so slots free at different times; counts handlers and held jobs. */
function staggered(names: string[]) {
  const now = { running: 0, held: 0, runningBy: new Map<string, number>(), heldBy: new Map<string, number>() };
  const most = { running: 0, held: 0, runningBy: new Map<string, number>(), heldBy: new Map<string, number>() };
  const bump = (map: Map<string, number>, top: Map<string, number>, queue: string, by: number) => {
    map.set(queue, (map.get(queue) ?? 0) + by);
    top.set(queue, Math.max(top.get(queue) ?? 0, map.get(queue)!));
  };
  const tasks = names.map((name) => defineTask(name, {
    handler: async (n: number, ctx) => {
      most.running = Math.max(most.running, ++now.running);
      bump(now.runningBy, most.runningBy, ctx.job.queue, 1);
      for (let i = 0; i < n % 7; i++) await new Promise((resolve) => setImmediate(resolve));
      now.running--;
      bump(now.runningBy, most.runningBy, ctx.job.queue, -1);
      // The slot frees as the handler returns: the job is no longer held.
      now.held--;
      bump(now.heldBy, most.heldBy, ctx.job.queue, -1);
    },
  }));
  /** Call on each job:claimed. */
  const claimed = (queue: string) => {
    most.held = Math.max(most.held, ++now.held);
    bump(now.heldBy, most.heldBy, queue, 1);
  };
  return { tasks, most, claimed };
}

describe('claims in flight', () => {
  it(`store capability: ${testDriver === 'postgres' ? 'the pool size, 4 by default' : '1 on SQLite'}`, async () => {
    const baton = await openBaton();
    expect(baton.store.claimsInFlight).toBe(testDriver === 'postgres' ? 4 : 1);
  });

  it('a drain of 300 jobs with slots freeing at different times: never more than concurrency handlers, never more than concurrency + prefetch held, and prefetch filled', async () => {
    const baton = await openBaton();
    const watch = watchClaims(baton);
    const s = staggered(['stagger']);
    await baton.enqueueMany(Array.from({ length: 300 }, (_, n) => ({ task: s.tasks[0]!, payload: n })));
    const worker = baton.worker({ tasks: s.tasks, concurrency: 5, prefetch: 3, pollInterval: 60_000 });
    worker.on('job:claimed', ({ job }) => s.claimed(job.queue));
    const done = collectEvents(worker, 'job:completed', 300);
    await worker.start();
    await done;
    expect(s.most.running).toBe(5);
    expect(s.most.held).toBe(8);
    expect(watch.most).toBeLessThanOrEqual(baton.store.claimsInFlight);
    expect((await baton.queueCounts()).find((c) => c.state === 'completed')?.count).toBe(300);
    await worker.stop();
  });

  it('per-queue slots with claims in flight: each queue runs at most its slots and holds at most slots + prefetch', async () => {
    const baton = await openBaton();
    watchClaims(baton);
    const s = staggered(['stagger']);
    const queues = ['a', 'b', 'c'];
    await baton.enqueueMany(Array.from({ length: 240 }, (_, n) => ({ task: s.tasks[0]!, payload: n, options: { queue: queues[n % 3]! } })));
    const worker = baton.worker({ tasks: s.tasks, queues: { a: 3, b: 2, c: 1 }, concurrency: 4, prefetch: 1, pollInterval: 60_000 });
    worker.on('job:claimed', ({ job }) => s.claimed(job.queue));
    const done = collectEvents(worker, 'job:completed', 240);
    await worker.start();
    await done;
    expect(s.most.running).toBeLessThanOrEqual(4);
    expect(s.most.held).toBeLessThanOrEqual(5);
    const slots: Record<string, number> = { a: 3, b: 2, c: 1 };
    for (const q of queues) {
      expect(s.most.runningBy.get(q)).toBeLessThanOrEqual(slots[q]!);
      expect(s.most.heldBy.get(q)).toBeLessThanOrEqual(slots[q]! + 1);
    }
    await worker.stop();
  });

  it('an idle worker woken while its claim is in flight makes no second claim beside it: one claim follows, then none', async () => {
    const baton = await openBaton();
    const watch = watchClaims(baton);
    const noop = defineTask('noop', { handler: async () => undefined });
    const worker = baton.worker({ tasks: [noop], concurrency: 4, pollInterval: 60_000 });
    await worker.start(); // its first claim found nothing: no backlog
    const before = watch.started;
    watch.holdClaims();
    // A pass starts its claim synchronously: right after the call it is in flight, or it will not be.
    const first = worker.loops.fetch();
    expect(watch.started).toBe(before + 1);
    const second = worker.loops.fetch();
    void worker.loops.fetch();
    expect(watch.started).toBe(before + 1);
    expect(watch.inFlight).toBe(1);
    watch.release();
    await first;
    await second; // the one claim that answers the wake-ups that came during the first
    expect(watch.started).toBe(before + 2);
    expect(watch.most).toBe(1);
    await worker.stop();
  });

  it(`under a backlog a freed slot's claim goes beside the one in flight: ${testDriver === 'postgres' ? 'two at once on PostgreSQL' : 'one at a time on SQLite'}`, async () => {
    const baton = await openBaton();
    const watch = watchClaims(baton);
    const gates = new Map<number, () => void>();
    const gated = defineTask('gated', { handler: (n: number) => new Promise<void>((resolve) => gates.set(n, resolve)) });
    await baton.enqueueMany(Array.from({ length: 6 }, (_, n) => ({ task: gated, payload: n })));
    const worker = baton.worker({ tasks: [gated], concurrency: 2, pollInterval: 60_000 });
    const done = collectEvents(worker, 'job:completed', 6);
    await worker.start(); // its first claim took 2 of 2: a backlog
    await until(() => gates.has(0) && gates.has(1), 'the first two jobs to run');
    watch.holdClaims();
    const before = watch.started;
    gates.get(0)!();
    await until(() => watch.started === before + 1, 'the claim that fills the freed slot');
    gates.get(1)!();
    if (testDriver === 'postgres') await until(() => watch.inFlight === 2, 'a second claim beside the first');
    else {
      // The wake-up that follows a freed slot comes within a turn or two of the event loop.
      for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(watch.inFlight).toBe(1);
    }
    watch.release();
    for (let n = 2; n < 6; n++) {
      await until(() => gates.has(n), `job ${n} to run`);
      gates.get(n)!();
    }
    await done;
    expect(watch.most).toBe(testDriver === 'postgres' ? 2 : 1);
    await worker.stop();
  });
});
