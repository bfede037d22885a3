import { describe, expect, it } from 'vitest';
import { ValidationError, defineTask, type Baton, type EnqueueOptions } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

const noop = defineTask('noop', { handler: async (payload: { n: number }) => payload.n });
const other = defineTask('other', { handler: async () => 'other' });

/** Every row of the jobs table, newest first. */
const allJobs = (baton: Baton) => baton.listJobs({ limit: 1000 });

/** Claims directly through the store, at an explicit time. */
function claim(baton: Baton, params: { now: number; tasks?: string[]; queues?: string[]; limit?: number; workerId?: string }) {
  return baton.store.jobClaim({
    workerId: params.workerId ?? 'test-claimer',
    tasks: params.tasks ?? ['noop'],
    queues: params.queues ?? ['default'],
    limit: params.limit ?? 100,
    leaseMs: 30_000,
    now: params.now,
  });
}

describe('enqueue options', () => {
  it('stores the defaults: queue default, priority 0, runAt now, 3 attempts, no timeout, no key', async () => {
    const baton = await openBaton();
    // Baton's own time (on PostgreSQL the server's clock, read through an offset measured at
    // start): the host's Date.now() can differ from it by the measurement's error, ms under load.
    const before = baton.store.clock.now();
    const job = await baton.enqueue(noop, { n: 1 });
    const after = baton.store.clock.now();
    expect(job).toMatchObject({ queue: 'default', task: 'noop', payload: { n: 1 }, state: 'queued', priority: 0, attempt: 0, maxAttempts: 3, timeoutMs: null, key: null });
    expect(job.runAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(job.runAt.getTime()).toBeLessThanOrEqual(after);
    expect(job.id).toBeGreaterThan(0);
    expect(await baton.getJob(job.id)).toEqual(job);
  });

  it('stores queue, priority, maxAttempts, timeout and key as given', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(noop, { n: 2 }, { queue: 'mail', priority: -5, maxAttempts: 7, timeout: 1234, key: 'k-1' });
    expect(job).toMatchObject({ queue: 'mail', priority: -5, maxAttempts: 7, timeoutMs: 1234, key: 'k-1' });
    expect(await baton.getJob(job.id)).toMatchObject({ queue: 'mail', priority: -5, maxAttempts: 7, timeoutMs: 1234, key: 'k-1' });
  });

  it("uses the task's maxAttempts and timeout when the enqueue gives none; the enqueue's win", async () => {
    const baton = await openBaton();
    const strict = defineTask('strict', { maxAttempts: 1, timeout: 500, handler: async () => null });
    expect(await baton.enqueue(strict, null)).toMatchObject({ maxAttempts: 1, timeoutMs: 500 });
    expect(await baton.enqueue(strict, null, { maxAttempts: 4, timeout: 900 })).toMatchObject({ maxAttempts: 4, timeoutMs: 900 });
  });

  it('a job with runAt in the future is not claimed before runAt, and is claimed at runAt', async () => {
    const baton = await openBaton();
    const runAt = new Date(Date.now() + 3_600_000);
    const job = await baton.enqueue(noop, { n: 1 }, { runAt });
    expect(job.runAt.getTime()).toBe(runAt.getTime());
    expect(await claim(baton, { now: runAt.getTime() - 1 })).toEqual([]);
    const claimed = await claim(baton, { now: runAt.getTime() });
    expect(claimed.map((j) => j.id)).toEqual([job.id]);
  });

  it('delay sets runAt = now + delay; a running worker does not claim the delayed job', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [noop], pollInterval: 60_000 });
    await worker.start();
    let claims = 0;
    worker.on('job:claimed', () => claims++);
    const before = baton.store.clock.now(); // Baton's time, as above
    const delayed = await baton.enqueue(noop, { n: 1 }, { delay: 3_600_000 });
    const after = baton.store.clock.now();
    expect(delayed.runAt.getTime()).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(delayed.runAt.getTime()).toBeLessThanOrEqual(after + 3_600_000);
    await worker.loops.fetch();
    await worker.loops.fetch();
    expect(claims).toBe(0);
    expect((await baton.getJob(delayed.id)).state).toBe('queued');

    // The worker is alive: a due job enqueued next is claimed and completes.
    const done = waitForEvent(worker, 'job:completed', (e) => (e.job.payload as { n: number }).n === 2);
    await baton.enqueue(noop, { n: 2 });
    await done;
    expect((await baton.getJob(delayed.id)).state).toBe('queued');
    expect(await claim(baton, { now: delayed.runAt.getTime() })).toHaveLength(1);
  });

  it('delay 0 is due at once', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(noop, { n: 1 }, { delay: 0 });
    expect(await claim(baton, { now: baton.store.clock.now() })).toHaveLength(1);
    expect((await baton.getJob(job.id)).state).toBe('running');
  });

  it('runAt and delay together: ValidationError naming delay; nothing written', async () => {
    const baton = await openBaton();
    const error = await baton.enqueue(noop, { n: 1 }, { runAt: new Date(), delay: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('validation');
    expect((error as ValidationError).issues.map((i) => i.path)).toContainEqual(['delay']);
    expect((error as ValidationError).message).toMatch(/runAt or delay/);
    expect(await allJobs(baton)).toEqual([]);
  });

  const invalid: Array<[string, EnqueueOptions | Record<string, unknown>, string]> = [
    ['priority 1.5', { priority: 1.5 }, 'priority'],
    ['priority as a string', { priority: '1' }, 'priority'],
    ['maxAttempts 0', { maxAttempts: 0 }, 'maxAttempts'],
    ['maxAttempts 1.5', { maxAttempts: 1.5 }, 'maxAttempts'],
    ['negative delay', { delay: -1 }, 'delay'],
    ['NaN delay', { delay: Number.NaN }, 'delay'],
    ['timeout 0', { timeout: 0 }, 'timeout'],
    ['empty queue', { queue: '' }, 'queue'],
    ['empty key', { key: '' }, 'key'],
    ['invalid runAt', { runAt: new Date(Number.NaN) }, 'runAt'],
    ['runAt as a string', { runAt: '2030-01-01' }, 'runAt'],
    ['timeout above the largest Node timer', { timeout: 2_147_483_648 }, 'timeout'],
    ['delay Number.MAX_SAFE_INTEGER', { delay: Number.MAX_SAFE_INTEGER }, 'delay'],
    ['delay past 9999-12-31', { delay: Date.UTC(10000, 0, 1) }, 'delay'],
    ['runAt in year 10000', { runAt: new Date(Date.UTC(10000, 0, 1)) }, 'runAt'],
    ['runAt before 1970', { runAt: new Date(-1) }, 'runAt'],
    ['runAt at the largest Date', { runAt: new Date(8.64e15) }, 'runAt'],
    ['a NUL in queue', { queue: 'mail\u0000' }, 'queue'],
    ['a lone surrogate in queue', { queue: 'mail\ud800' }, 'queue'],
    ['a NUL in key', { key: 'k\u0000' }, 'key'],
    ['a lone surrogate in key', { key: '\udc00k' }, 'key'],
  ];
  for (const [name, options, field] of invalid) {
    it(`${name}: ValidationError naming ${field}; nothing written`, async () => {
      const baton = await openBaton();
      const error = await baton.enqueue(noop, { n: 1 }, options as EnqueueOptions).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues.map((i) => i.path[0])).toContain(field);
      expect((error as Error).message).toContain(field);
      expect(await allJobs(baton)).toEqual([]);
    });
  }

  it('an unknown option: ValidationError naming it; nothing written', async () => {
    const baton = await openBaton();
    const error = await baton.enqueue(noop, { n: 1 }, { prio: 1 } as unknown as EnqueueOptions).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain('prio');
    expect(await allJobs(baton)).toEqual([]);
  });

  it('runAt at the ends of the range (1970-01-01T00:00:00.000Z, 9999-12-31T23:59:59.999Z) is stored and read back exactly', async () => {
    const baton = await openBaton();
    const first = new Date(0);
    const last = new Date('9999-12-31T23:59:59.999Z');
    const early = await baton.enqueue(noop, { n: 1 }, { runAt: first });
    const late = await baton.enqueue(noop, { n: 2 }, { runAt: last });
    expect(early.runAt.toISOString()).toBe(first.toISOString());
    expect(late.runAt.toISOString()).toBe(last.toISOString());
    expect((await baton.getJob(early.id)).runAt.toISOString()).toBe(first.toISOString());
    expect((await baton.getJob(late.id)).runAt.toISOString()).toBe(last.toISOString());
  });

  it('a delay that lands past 9999-12-31T23:59:59.999Z: ValidationError naming delay and the limit; nothing written', async () => {
    const baton = await openBaton();
    const error = await baton.enqueue(noop, { n: 1 }, { delay: 9007199254740991 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues).toEqual([{ path: ['delay'], message: expect.stringContaining('9999-12-31T23:59:59.999Z') }]);
    expect(await allJobs(baton)).toEqual([]);
  });

  it('a task name with a NUL or a lone surrogate: ValidationError naming task; nothing written', async () => {
    const baton = await openBaton();
    for (const name of ['send\u0000', 'send\ud800', '\udfffsend']) {
      const error = await baton.enqueue(name, {}).catch((e: unknown) => e);
      expect(error, JSON.stringify(name)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues.map((i) => i.path), JSON.stringify(name)).toEqual([['task']]);
      expect((error as Error).message).toMatch(/task/);
    }
    const many = await baton.enqueueMany([{ task: 'ok', payload: 1 }, { task: 'ok', payload: 2, options: { queue: 'q\u0000' } }]).catch((e: unknown) => e);
    expect(many).toBeInstanceOf(ValidationError);
    expect((many as Error).message).toMatch(/item 1/);
    expect(await allJobs(baton)).toEqual([]);
  });

  it('a task that is neither a task object nor a non-empty name: ValidationError', async () => {
    const baton = await openBaton();
    await expect(baton.enqueue('', {})).rejects.toBeInstanceOf(ValidationError);
    await expect(baton.enqueue(42 as unknown as string, {})).rejects.toBeInstanceOf(ValidationError);
    expect(await allJobs(baton)).toEqual([]);
  });
});

describe('claim order and claim scope', () => {
  it('claims in order priority (lower first), then runAt, then id', async () => {
    const baton = await openBaton();
    const t0 = Date.now() - 60_000;
    const at = (offset: number) => new Date(t0 + offset);
    // Enqueued in an order that differs from the claim order on every key.
    const spec: Array<[string, EnqueueOptions]> = [
      ['p5-early', { priority: 5, runAt: at(0) }],
      ['p0-late', { priority: 0, runAt: at(2000) }],
      ['p0-early-b', { priority: 0, runAt: at(1000) }],
      ['p-3', { priority: -3, runAt: at(3000) }],
      ['p0-early-a', { priority: 0, runAt: at(1000) }],
      ['p5-late', { priority: 5, runAt: at(5000) }],
      ['p1', { priority: 1, runAt: at(500) }],
    ];
    const jobs = new Map<number, string>();
    for (const [name, options] of spec) jobs.set((await baton.enqueue(noop, { n: 0 }, options)).id, name);
    const order = (await claim(baton, { now: baton.store.clock.now(), limit: 100 })).map((j) => jobs.get(j.id));
    // p0-early-b and p0-early-a tie on priority and runAt: the lower id (b, enqueued first) wins.
    expect(order).toEqual(['p-3', 'p0-early-b', 'p0-early-a', 'p0-late', 'p1', 'p5-early', 'p5-late']);
  });

  it('claims in that order one at a time too (limit 1)', async () => {
    const baton = await openBaton();
    const low = await baton.enqueue(noop, { n: 1 }, { priority: 10 });
    const high = await baton.enqueue(noop, { n: 2 }, { priority: -10 });
    const mid = await baton.enqueue(noop, { n: 3 }, { priority: 0 });
    const order: number[] = [];
    for (let i = 0; i < 3; i++) order.push(...(await claim(baton, { now: baton.store.clock.now(), limit: 1 })).map((j) => j.id));
    expect(order).toEqual([high.id, mid.id, low.id]);
    expect(await claim(baton, { now: baton.store.clock.now() })).toEqual([]);
  });

  it('a claim sets running, increments attempt and takes a lease with a fresh token', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(noop, { n: 1 });
    const now = baton.store.clock.now();
    const [claimed] = await claim(baton, { now, workerId: 'w-1' });
    expect(claimed).toMatchObject({ id: job.id, state: 'running', attempt: 1, leaseOwner: 'w-1' });
    expect(claimed!.leaseExpiresAt!.getTime()).toBe(now + 30_000);
    expect(claimed!.leaseToken).toBeGreaterThan(0);
  });

  it('claims only the given tasks from the given queues', async () => {
    const baton = await openBaton();
    const a = await baton.enqueue(noop, { n: 1 }, { queue: 'a' });
    const b = await baton.enqueue(noop, { n: 2 }, { queue: 'b' });
    const otherInA = await baton.enqueue(other, null, { queue: 'a' });
    const def = await baton.enqueue(noop, { n: 3 });
    const ids = (jobs: { id: number }[]) => jobs.map((j) => j.id).sort((x, y) => x - y);
    expect(ids(await claim(baton, { now: baton.store.clock.now(), queues: ['a'], tasks: ['noop'] }))).toEqual([a.id]);
    expect(ids(await claim(baton, { now: baton.store.clock.now(), queues: ['a', 'b', 'default'], tasks: ['noop'] }))).toEqual([b.id, def.id]);
    expect(ids(await claim(baton, { now: baton.store.clock.now(), queues: ['a', 'b', 'default'], tasks: ['other'] }))).toEqual([otherInA.id]);
  });

  it('a worker runs only tasks it registered and only from its queues', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [noop], queues: ['a', 'b'], concurrency: 4 });
    await worker.start();
    const claimedIds: number[] = [];
    worker.on('job:claimed', (e) => claimedIds.push(e.job.id));
    const done = collectEvents(worker, 'job:completed', 2);
    const inA = await baton.enqueue(noop, { n: 1 }, { queue: 'a' });
    const notRegistered = await baton.enqueue(other, null, { queue: 'a' });
    const otherQueue = await baton.enqueue(noop, { n: 3 }, { queue: 'c' });
    const defaultQueue = await baton.enqueue(noop, { n: 4 });
    const inB = await baton.enqueue(noop, { n: 5 }, { queue: 'b' });
    const completed = await done;
    expect(completed.map((e) => e.job.id).sort((x, y) => x - y)).toEqual([inA.id, inB.id]);
    // One more pass after both completions: the others are still not claimable by it.
    await worker.loops.fetch();
    expect(claimedIds.sort((x, y) => x - y)).toEqual([inA.id, inB.id]);
    for (const job of [notRegistered, otherQueue, defaultQueue]) expect((await baton.getJob(job.id)).state).toBe('queued');
  });

  it('a worker runs due jobs in priority order when it has one slot', async () => {
    const baton = await openBaton();
    const jobs = await baton.enqueueMany([
      { task: noop, payload: { n: 1 }, options: { priority: 3 } },
      { task: noop, payload: { n: 2 }, options: { priority: 1 } },
      { task: noop, payload: { n: 3 }, options: { priority: 2 } },
      { task: noop, payload: { n: 4 }, options: { priority: 1 } },
    ]);
    const worker = baton.worker({ tasks: [noop], concurrency: 1 });
    const done = collectEvents(worker, 'job:claimed', 4);
    await worker.start();
    const order = (await done).map((e) => e.job.id);
    expect(order).toEqual([jobs[1]!.id, jobs[3]!.id, jobs[2]!.id, jobs[0]!.id]);
  });
});

describe('enqueueMany', () => {
  it('writes every item in one transaction, in input order', async () => {
    const calls: string[] = [];
    const baton = await openBaton({}, (op) => calls.push(op));
    calls.length = 0;
    const jobs = await baton.enqueueMany([
      { task: noop, payload: { n: 1 } },
      { task: 'other', payload: null, options: { queue: 'q2', priority: 4 } },
      { task: noop, payload: { n: 3 }, options: { delay: 1000 } },
    ]);
    expect(calls.filter((op) => op === 'jobInsertMany')).toHaveLength(1);
    expect(jobs.map((j) => j.task)).toEqual(['noop', 'other', 'noop']);
    expect(jobs.map((j) => j.payload)).toEqual([{ n: 1 }, null, { n: 3 }]);
    expect(jobs[1]).toMatchObject({ queue: 'q2', priority: 4 });
    expect(jobs[0]!.id).toBeLessThan(jobs[1]!.id);
    expect(jobs[1]!.id).toBeLessThan(jobs[2]!.id);
    expect((await allJobs(baton)).map((j) => j.id)).toEqual(jobs.map((j) => j.id).reverse());
  });

  it('an invalid item writes nothing, and the error names its index', async () => {
    const calls: string[] = [];
    const baton = await openBaton({}, (op) => calls.push(op));
    calls.length = 0;
    const error = await baton
      .enqueueMany([
        { task: noop, payload: { n: 1 } },
        { task: noop, payload: { n: 2 } },
        { task: noop, payload: { n: 3 }, options: { priority: 0.5 } },
        { task: noop, payload: { n: 4 } },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/item 2\b/);
    expect((error as Error).message).toContain('priority');
    expect(calls).not.toContain('jobInsertMany');
    expect(await allJobs(baton)).toEqual([]);
  });

  it('a non-JSON payload in a later item writes nothing and names its index', async () => {
    const baton = await openBaton();
    const error = await baton
      .enqueueMany([
        { task: noop, payload: { n: 1 } },
        { task: noop, payload: { n: 10n } },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/item 1\b/);
    expect(await allJobs(baton)).toEqual([]);
  });

  it('an empty array returns [] without touching the store', async () => {
    const calls: string[] = [];
    const baton = await openBaton({}, (op) => calls.push(op));
    calls.length = 0;
    expect(await baton.enqueueMany([])).toEqual([]);
    expect(calls).toEqual([]);
  });

  it('not an array: ValidationError', async () => {
    const baton = await openBaton();
    await expect(baton.enqueueMany({} as never)).rejects.toBeInstanceOf(ValidationError);
  });

  it('emits job:enqueued once per created job', async () => {
    const baton = await openBaton();
    const seen: number[] = [];
    baton.on('job:enqueued', (e) => seen.push(e.job.id));
    const jobs = await baton.enqueueMany([
      { task: noop, payload: { n: 1 }, options: { key: 'same' } },
      { task: noop, payload: { n: 2 }, options: { key: 'same' } },
      { task: noop, payload: { n: 3 } },
    ]);
    expect(jobs[1]!.id).toBe(jobs[0]!.id);
    expect(seen).toEqual([jobs[0]!.id, jobs[2]!.id]);
  });
});
