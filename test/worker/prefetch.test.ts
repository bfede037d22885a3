/**
 * `prefetch`: a worker claims up to that many jobs beyond its free slots. They hold
 * their leases while they wait, start the moment a slot frees (claim order), end
 * cancelled without running when cancelled, and are handed back at once by stop().
 * No handler of theirs runs, so none is aborted: no `job:aborted` (their outcome event
 * says how they ended).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, defineTask, type Baton, type Worker } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';

/** A task whose runs wait until `finish(n)` (n = the payload); records starts in order and the most running at once. */
function gatedTask() {
  const gates = new Map<number, () => void>();
  const started: number[] = [];
  let active = 0;
  let maxActive = 0;
  const task = defineTask('gated', {
    handler: async (n: number) => {
      started.push(n);
      maxActive = Math.max(maxActive, ++active);
      await new Promise<void>((resolve) => gates.set(n, resolve));
      active--;
      return n;
    },
  });
  const finish = async (n: number) => {
    await until(() => gates.has(n), `job ${n} to start`);
    gates.get(n)!();
  };
  return { task, started, finish, maxActive: () => maxActive };
}

const states = async (baton: Baton, ids: number[]) => Promise.all(ids.map(async (id) => (await baton.getJob(id)).state));

/** Ids of the jobs `worker` emits `job:aborted` for, as they come. */
function abortedIds(worker: Worker): number[] {
  const ids: number[] = [];
  worker.on('job:aborted', ({ job }) => ids.push(job.id));
  return ids;
}

describe('prefetch: jobs claimed ahead of a free slot', () => {
  it('holds concurrency + prefetch jobs, runs concurrency of them at once, and starts a held job when a slot frees, in claim order', async () => {
    const baton = await openBaton();
    const { task, started, finish, maxActive } = gatedTask();
    const jobs = await baton.enqueueMany(Array.from({ length: 7 }, (_, n) => ({ task, payload: n })));
    const ids = jobs.map((j) => j.id);
    const worker = baton.worker({ tasks: [task], concurrency: 2, prefetch: 3, pollInterval: 60_000 });
    const claimed = collectEvents(worker, 'job:claimed', 5);
    await worker.start();
    await claimed;
    await until(() => started.length === 2, 'two handlers to start');
    expect(await states(baton, ids)).toEqual(['running', 'running', 'running', 'running', 'running', 'queued', 'queued']);
    expect(started).toEqual([0, 1]);

    const all = collectEvents(worker, 'job:completed', 7);
    await finish(1);
    await until(() => started.length === 3, 'a held job to take the freed slot');
    expect(started).toEqual([0, 1, 2]);
    for (const n of [0, 2, 3, 4, 5, 6]) await finish(n);
    const done = await all;
    expect(done.map((e) => e.job.id).sort((a, b) => a - b)).toEqual(ids);
    if (baton.store.claimsInFlight === 1) expect(started).toEqual([0, 1, 2, 3, 4, 5, 6]);
    else {
      // Jobs 5 and 6 are claimed by two claims in flight together (PostgreSQL), one per freed
      // slot; the one that returns first starts first when a slot is free on its return
      // (claims-overlap.postgres.test.ts holds both jobs and shows place in line then).
      expect(started.slice(0, 5)).toEqual([0, 1, 2, 3, 4]);
      expect([...started].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    }
    expect(maxActive()).toBe(2);
    for (const id of ids) expect(await baton.getJob(id)).toMatchObject({ state: 'completed', attempt: 1 });
    await worker.stop();
  });

  it('a job claimed ahead and cancelled ends cancelled without running its handler, and without job:aborted', async () => {
    const baton = await openBaton();
    const { task, started, finish } = gatedTask();
    const [a, b] = await baton.enqueueMany([{ task, payload: 0 }, { task, payload: 1 }]);
    const worker = baton.worker({ tasks: [task], concurrency: 1, prefetch: 1, pollInterval: 60_000 });
    const aborted = abortedIds(worker);
    const claimed = collectEvents(worker, 'job:claimed', 2);
    await worker.start();
    await claimed;
    const cancelled = waitForEvent(worker, 'job:cancelled');
    await baton.cancel(b!.id, 'not needed');
    expect((await cancelled).job.id).toBe(b!.id);
    expect(await baton.getJob(b!.id)).toMatchObject({ state: 'cancelled', cancelReason: 'not needed' });
    const completed = waitForEvent(worker, 'job:completed');
    await finish(0);
    expect((await completed).job.id).toBe(a!.id);
    expect(started).toEqual([0]);
    await worker.stop();
    expect(aborted).toEqual([]);
  });

  it('stop() hands back the jobs claimed ahead at once (queued, attempt not counted, no job:aborted) while the running one drains; worker:stopping counts them apart', async () => {
    const baton = await openBaton();
    const { task, started, finish } = gatedTask();
    const [a, b, c] = await baton.enqueueMany([0, 1, 2].map((n) => ({ task, payload: n })));
    const worker = baton.worker({ tasks: [task], concurrency: 1, prefetch: 2, pollInterval: 60_000, drainTimeout: 600_000 });
    const aborted = abortedIds(worker);
    const claimed = collectEvents(worker, 'job:claimed', 3);
    await worker.start();
    await claimed;
    await until(() => started.length === 1, 'the first handler to start');
    const released = collectEvents(worker, 'job:released', 2);
    const stoppingEvent = waitForEvent(worker, 'worker:stopping');
    const stopping = worker.stop();
    expect(await stoppingEvent).toEqual({ workerId: worker.id, running: 1, waiting: 2 });
    expect((await released).map((e) => e.job.id).sort((x, y) => x - y)).toEqual([b!.id, c!.id]);
    for (const job of [b!, c!]) expect(await baton.getJob(job.id)).toMatchObject({ state: 'queued', attempt: 0, leaseOwner: null });
    expect(await baton.getJob(a!.id)).toMatchObject({ state: 'running' });
    await finish(0);
    expect(await stopping).toEqual({ finished: 1, released: 2, abandoned: 0, unreleased: [] });
    expect(await baton.getJob(a!.id)).toMatchObject({ state: 'completed', attempt: 1 });
    expect(started).toEqual([0]);
    expect(aborted).toEqual([]);
  });

  it('the heartbeat renews the lease of a job claimed ahead', async () => {
    const baton = await openBaton();
    const { task, finish } = gatedTask();
    const [, b] = await baton.enqueueMany([{ task, payload: 0 }, { task, payload: 1 }]);
    let now = baton.store.clock.now() + 1_000; // Baton's time (PostgreSQL: the server's), a second on: the jobs are due by this clock
    const worker = baton.worker({ tasks: [task], concurrency: 1, prefetch: 1, pollInterval: 60_000, leaseTtl: 600_000, clock: { now: () => now } });
    const claimed = collectEvents(worker, 'job:claimed', 2);
    await worker.start();
    await claimed;
    const before = (await baton.getJob(b!.id)).leaseExpiresAt!.getTime();
    now += 100_000;
    await worker.loops.heartbeat();
    expect((await baton.getJob(b!.id)).leaseExpiresAt!.getTime()).toBe(before + 100_000);
    const completed = collectEvents(worker, 'job:completed', 2);
    await finish(0);
    await finish(1);
    await completed;
    await worker.stop();
  });

  it('a job claimed ahead whose lease ran out while it waited (the process was frozen past it) is not started: its lease counts as lost (lease:lost, no job:aborted)', async () => {
    const baton = await openBaton();
    const { task, started, finish } = gatedTask();
    const [, b] = await baton.enqueueMany([{ task, payload: 0 }, { task, payload: 1 }]);
    let now = baton.store.clock.now() + 1_000; // Baton's time (PostgreSQL: the server's), a second on: the jobs are due by this clock
    const slow = 2_147_483_647; // no heartbeat or rescue tick during the test: the clock alone moves
    const worker = baton.worker({ tasks: [task], concurrency: 1, prefetch: 1, pollInterval: slow, leaseTtl: 600_000, heartbeatInterval: 599_999, rescueInterval: slow, clock: { now: () => now } });
    const aborted = abortedIds(worker);
    const claimed = collectEvents(worker, 'job:claimed', 2);
    await worker.start();
    await claimed;
    await until(() => started.length === 1, 'the first handler to start');
    now += 700_000; // past the waiting job's lease
    const lost = waitForEvent(worker, 'lease:lost');
    await finish(0);
    expect((await lost).job.id).toBe(b!.id);
    expect(started).toEqual([0]);
    await worker.stop();
    expect(started).toEqual([0]);
    expect(aborted).toEqual([]);
  });

  it('refuses a negative or fractional prefetch with an error naming the option', async () => {
    const baton = await openBaton();
    const { task } = gatedTask();
    expect(() => baton.worker({ tasks: [task], prefetch: -1 })).toThrow(ConfigError);
    expect(() => baton.worker({ tasks: [task], prefetch: 1.5 })).toThrow(/prefetch/);
  });
});
