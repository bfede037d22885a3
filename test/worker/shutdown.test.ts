/**
 * Graceful shutdown and hand-off (SPEC "Graceful shutdown", cases.md C01, C02, C03a/b):
 * stop() drains, then aborts with ShutdownError, then releases what is left
 * (queued, runAt now, lease cleared, attempt not counted, checkpoint kept) so
 * another worker resumes at once, never after the lease timeout. Worker processes
 * are test/fixtures/worker-process.ts (SIGTERM = stop(), a second signal = stop({ now: true })).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineTask, type Baton, type StopSummary } from 'baton-jobs';
import { spawnWorker, type ChildHandle } from '../helpers/child.js';
import { spawnClient } from '../helpers/client.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';
import { openBaton } from '../helpers/db.js';

/**
 * An enqueue in another process, parked at a barrier: returns `go()`, which lets
 * it enqueue at once (no process start-up in the timed window) and resolves with its answer.
 */
async function parkedEnqueue(database: string, dir: string, task: string, payload: unknown) {
  const barrier = join(dir, `barrier-${Math.random().toString(36).slice(2)}`);
  const client = spawnClient({ database, op: 'enqueue', task, payload, barrier });
  await client.waitFor((m) => m.type === 'waiting', 'the client to wait at its barrier');
  return {
    go: async () => {
      writeFileSync(barrier, '');
      const answer = await client.waitFor((m) => m.type === 'result' || m.type === 'error', 'the enqueue answer');
      expect(answer.type, JSON.stringify(answer)).toBe('result');
      return answer.value as { id: number };
    },
  };
}

/** The child's exit, or a rejection after `ms` (so a process held alive fails fast instead of hitting the test timeout). */
function exitWithin(child: ChildHandle, ms: number, what: string) {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    child.exited.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: process ${child.pid} still alive after ${ms} ms`)), ms))),
  ]);
}

/**
 * Makes each `jobClaim` of `baton`'s store that takes jobs commit in the database, then
 * wait until `letGo()`; `inFlight` resolves when the first such claim has committed.
 */
function holdNextClaim(baton: Baton): { inFlight: Promise<void>; letGo: () => void } {
  const store = baton.store;
  const claim = store.jobClaim.bind(store);
  let claimedInDatabase!: () => void;
  const inFlight = new Promise<void>((resolve) => (claimedInDatabase = resolve));
  let letGo!: () => void;
  const gate = new Promise<void>((resolve) => (letGo = resolve));
  store.jobClaim = async (params) => {
    const claimed = await claim(params);
    if (claimed.length > 0) {
      claimedInDatabase();
      await gate;
    }
    return claimed;
  };
  return { inFlight, letGo };
}

const indexOf = (child: ChildHandle, match: (m: { type: string; name?: string; jobId?: number }) => boolean) => child.messages.findIndex(match);
/**
 * Job A running (held until `finishA()`, deaf to its signal) on a worker of two slots
 * (plus `options`), and the claim that takes job B committed in the database but held
 * until `letGo()` ({@link holdNextClaim}).
 */
async function claimInFlightBesideA(options: { drainTimeout?: number; abortGrace?: number }) {
  const baton = await openBaton();
  let finish!: () => void;
  const gated = defineTask('gated', { handler: (n: number) => (n === 0 ? new Promise<number>((resolve) => (finish = () => resolve(n))) : n) });
  const a = await baton.enqueue(gated, 0);
  const worker = baton.worker({ tasks: [gated], concurrency: 2, pollInterval: 60_000, ...options });
  const aStarted = waitForEvent(worker, 'job:started', (e) => e.job.id === a.id);
  await worker.start();
  await aStarted;
  const { inFlight, letGo } = holdNextClaim(baton);
  const b = await baton.enqueue(gated, 1); // wakes the worker: the claim that takes B is held
  await inFlight;
  return { baton, worker, a, b, finishA: () => finish(), letGo };
}

const eventAt = (child: ChildHandle, name: string, jobId?: number) =>
  indexOf(child, (m) => m.type === 'event' && m.name === name && (jobId === undefined || m.jobId === jobId));

describe('C01: stop() waits for the running job', () => {
  it('C01: stop() resolves only after A finishes; B enqueued after stop began is never claimed', async () => {
    const { db, baton, kit, ledger } = await openKitBaton();
    // A drain longer than the test: stop() can only resolve because A finished.
    const worker = baton.worker({ tasks: kit.tasks, concurrency: 2, pollInterval: 500, drainTimeout: 600_000 });
    const order: string[] = [];
    worker.on('job:claimed', (e) => order.push(`claimed:${e.job.id}`));
    worker.on('job:completed', (e) => order.push(`completed:${e.job.id}`));
    worker.on('worker:stopped', () => order.push('stopped'));
    await worker.start();

    // A runs until its gate opens (after B and B2 are enqueued), however loaded the machine is.
    const gate = join(db.dir, 'gate-a');
    const claimed = waitForEvent(worker, 'job:claimed');
    const a = await baton.enqueue(kit.gated, { path: gate });
    await claimed;
    const other = await parkedEnqueue(db.url, db.dir, 'sleepy', { ms: 100 });

    const stopping = waitForEvent(worker, 'worker:stopping');
    const stopped = worker.stop().then((summary) => {
      order.push('stop resolved');
      return { summary, at: Date.now() };
    });
    expect(await stopping).toEqual({ workerId: worker.id, running: 1, waiting: 0 });
    // B from another process and B2 from this one (a local enqueue normally wakes the worker).
    const b = await other.go();
    const b2 = await baton.enqueue(kit.sleepy, { ms: 100 });
    writeFileSync(gate, '');
    const { summary, at: stoppedAt } = await stopped;

    expect(order).toEqual([`claimed:${a.id}`, `completed:${a.id}`, 'stopped', 'stop resolved']);
    expect(summary).toEqual<StopSummary>({ finished: 1, released: 0, abandoned: 0, unreleased: [] });
    const afterA = await baton.getJob(a.id);
    expect(afterA.state).toBe('completed');
    expect(afterA.attempt).toBe(1);
    expect(afterA.finishedAt!.getTime()).toBeLessThanOrEqual(stoppedAt);
    // B really was waiting while A still ran, and still was not claimed.
    expect((await baton.getJob(b.id)).createdAt.getTime()).toBeLessThan(afterA.finishedAt!.getTime());
    for (const id of [b.id, b2.id]) {
      const job = await baton.getJob(id);
      expect(job.state).toBe('queued');
      expect(job.attempt).toBe(0);
      expect(ledger.rows(id)).toEqual([]);
    }
    expect(ledger.rows(a.id)).toHaveLength(1);
    expect(ledger.rows(a.id)[0]!.finishedAt).not.toBeNull();
  });

  it('C01 (worker process, SIGTERM): exits 0 after A completes; "stopped" comes after A; B stays queued', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const worker = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 2, pollInterval: 500, drainTimeout: 600_000 } });
    // A runs until the test opens its gate, so it is surely still running at SIGTERM however
    // loaded the machine is; the gate opens once B has been enqueued during the drain.
    const gate = join(db.dir, 'gate-a');
    const a = await baton.enqueue(kit.gated, { path: gate });
    await worker.waitForEvent('job:claimed', a.id);
    const other = await parkedEnqueue(db.url, db.dir, 'sleepy', { ms: 100 });

    worker.kill('SIGTERM');
    await worker.waitForEvent('worker:stopping');
    const b = await other.go();
    writeFileSync(gate, '');
    const exit = await worker.exited;

    expect(exit).toEqual({ code: 0, signal: null });
    const completedA = eventAt(worker, 'job:completed', a.id);
    const stoppedLine = indexOf(worker, (m) => m.type === 'stopped');
    expect(completedA).toBeGreaterThanOrEqual(0);
    expect(stoppedLine).toBeGreaterThan(completedA);
    expect(worker.messages[stoppedLine]!.summary).toEqual({ finished: 1, released: 0, abandoned: 0, unreleased: [] });
    expect(eventAt(worker, 'job:claimed', b.id)).toBe(-1);

    const afterA = await baton.getJob(a.id);
    expect(afterA.state).toBe('completed');
    expect(afterA.attempt).toBe(1);
    expect(ledger.rows(a.id)).toHaveLength(1);
    const afterB = await baton.getJob(b.id);
    expect(afterB.createdAt.getTime()).toBeLessThan(afterA.finishedAt!.getTime());
    expect(afterB.state).toBe('queued');
    expect(ledger.rows(b.id)).toEqual([]);
  });
});

describe('C02: outcomes written during the drain are kept', () => {
  it('C02: a job that throws during drain gets its retry recorded; a job that enqueues a child during drain completes', async () => {
    const { baton, kit, ledger } = await openKitBaton();
    // A drain longer than the test: both jobs finish within it however busy the machine.
    const worker = baton.worker({ tasks: kit.tasks, concurrency: 2, drainTimeout: 600_000 });
    const failures: Array<{ retryAt: Date | null; message: string; at: number }> = [];
    worker.on('job:failed', (e) => failures.push({ retryAt: e.retryAt, message: e.message, at: Date.now() }));
    await worker.start();

    const bothClaimed = collectEvents(worker, 'job:claimed', 2);
    const [a, b] = await baton.enqueueMany([
      { task: kit.boom, payload: { message: 'x', afterMs: 1500 }, options: { maxAttempts: 3 } },
      { task: kit.spawnChild, payload: { firstMs: 800, thenMs: 800 } },
    ]);
    await bothClaimed;
    const summary = await worker.stop();
    expect(summary).toEqual<StopSummary>({ finished: 2, released: 0, abandoned: 0, unreleased: [] });

    const afterA = await baton.getJob(a!.id);
    expect(afterA.state).toBe('queued'); // awaiting retry, not running
    expect(afterA.attempt).toBe(1);
    expect(afterA.errors).toHaveLength(1);
    expect(afterA.errors[0]!.message).toContain('x');
    expect(afterA.leaseOwner).toBeNull();
    expect(afterA.runAt.getTime()).toBeGreaterThan(afterA.errors[0]!.time.getTime());
    expect(failures).toHaveLength(1);
    expect(failures[0]!.retryAt).toEqual(afterA.runAt);

    const afterB = await baton.getJob(b!.id);
    expect(afterB.state).toBe('completed');
    const result = afterB.result as { ok: boolean; child: number };
    expect(result.ok).toBe(true);
    const child = await baton.getJob(result.child);
    expect(child.task).toBe('sleepy');
    expect(child.state).toBe('queued');
    expect(ledger.rows(child.id)).toEqual([]);

    const running = await baton.listJobs({ state: 'running' });
    expect(running.filter((j) => j.leaseOwner === worker.id)).toEqual([]);
    expect(running).toEqual([]);
  });
});

describe('SIGTERM hand-off with a checkpoint', () => {
  it('releases a checkpointing job (queued, runAt ≤ now, lease cleared, attempt not counted, checkpoint kept); a second worker resumes from it', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, drainTimeout: 300, abortGrace: 2000 } });
    // 8 s of steps: the drain (300 ms) ends long before the job could, even when the
    // SIGTERM reaches W1 seconds after its second checkpoint on a busy machine.
    const job = await baton.enqueue(kit.steps, { steps: 32, stepMs: 250 }, { maxAttempts: 3 });
    await w1.waitForEvent('job:claimed', job.id);
    await w1.waitFor(() => w1.messages.filter((m) => m.type === 'event' && m.name === 'job:checkpoint').length >= 2, 'two checkpoints');
    const before = await baton.getJob(job.id);
    expect(before.state).toBe('running');
    expect(before.attempt).toBe(1);

    w1.kill('SIGTERM');
    const exit = await w1.exited;
    const releasedAt = Date.now();
    expect(exit).toEqual({ code: 0, signal: null });
    const abortedLine = w1.messages.find((m) => m.type === 'event' && m.name === 'job:aborted' && m.jobId === job.id);
    expect(abortedLine?.reason).toBe('shutdown');
    expect(eventAt(w1, 'job:released', job.id)).toBeGreaterThan(eventAt(w1, 'job:aborted', job.id));
    expect(w1.messages.find((m) => m.type === 'stopped')?.summary).toMatchObject({ finished: 0, released: 1 });

    const released = await baton.getJob(job.id);
    expect(released.state).toBe('queued');
    expect(released.runAt.getTime()).toBeLessThanOrEqual(releasedAt);
    expect(released.leaseOwner).toBeNull();
    expect(released.leaseExpiresAt).toBeNull();
    expect(released.attempt).toBe(0); // back to what it was before the claim: not counted
    expect(released.errors).toEqual([]);
    const step = (released.checkpoint as { step: number }).step;
    expect(step).toBeGreaterThanOrEqual(2);

    const w2 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1 } });
    const completed = await w2.waitForEvent('job:completed', job.id);
    expect(completed.result).toMatchObject({ resumedFrom: step, steps: 32, pid: w2.pid });
    const done = await baton.getJob(job.id);
    expect(done.state).toBe('completed');
    expect(done.attempt).toBe(1);
    expect(done.errors).toEqual([]);
    expect(done.checkpoint).toEqual({ step: 32 });
    const rows = ledger.rows(job.id);
    expect(rows.map((r) => r.pid)).toEqual([w1.pid, w2.pid]);
    expect(rows.filter((r) => r.finishedAt !== null)).toHaveLength(1);
  });
});

describe('C03: a job outliving the grace period is released before the worker exits', () => {
  const variants = [
    // Handlers far longer than the test: a worker held by its handler would never exit.
    { id: 'C03a', name: 'sleepy (honours the signal)', task: 'sleepy', payload: { ms: 3_600_000 } },
    { id: 'C03b', name: 'deaf (ignores the signal)', task: 'deaf', payload: { ms: 3_600_000 } },
    { id: 'C03 (hang)', name: 'hang (never settles)', task: 'hang', payload: {} },
  ] as const;

  for (const variant of variants) {
    it(`${variant.id}: ${variant.name}: released at shutdown and claimed by W2 long before the 600 s lease; policy: a shutdown-interrupted attempt is not counted, so with maxAttempts 1 the job is not failed`, async () => {
      const { db, baton, ledger, ledgerPath } = await openKitBaton();
      const config = { concurrency: 1, leaseTtl: 600_000, heartbeatInterval: 5000, pollInterval: 1000, drainTimeout: 300, abortGrace: 500 };
      const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: config });
      const job = await baton.enqueue(variant.task, variant.payload, { maxAttempts: 1 });
      await w1.waitForEvent('job:claimed', job.id);
      const w2 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: config });
      const leaseExpiresAt = (await baton.getJob(job.id)).leaseExpiresAt!.getTime();
      expect(leaseExpiresAt).toBeGreaterThan(Date.now() + 500_000);

      w1.kill('SIGTERM');
      // Not held by the handler (it would run for an hour): drainTimeout + abortGrace = 0.8 s.
      const exit = await exitWithin(w1, 60_000, `${variant.id} after SIGTERM`);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(w1.messages.find((m) => m.type === 'event' && m.name === 'job:aborted' && m.jobId === job.id)?.reason).toBe('shutdown');
      const releasedLine = w1.messages.find((m) => m.type === 'event' && m.name === 'job:released' && m.jobId === job.id);
      expect(releasedLine).toBeDefined();
      expect(eventAt(w1, 'job:released', job.id)).toBeLessThan(indexOf(w1, (m) => m.type === 'stopped'));
      expect(eventAt(w1, 'job:failed', job.id)).toBe(-1);

      const claimed = await w2.waitForEvent('job:claimed', job.id);
      expect(claimed.attempt).toBe(1);
      // W2 took it over after the release, not after the lease: long before the lease's
      // expiry. (Not "claimed.at >= released.at": W1 stamps its released line after its
      // commit returns, and W2, woken by that commit, may stamp its claim first.)
      expect(claimed.at as number).toBeLessThan(leaseExpiresAt - 500_000);
      const now = await baton.getJob(job.id);
      expect(now.state).toBe('running');
      expect(now.attempt).toBe(1);
      expect(now.maxAttempts).toBe(1);
      expect(now.errors).toEqual([]);
      // W2's handler writes its ledger row just after the claim is reported.
      const rows = (await until(() => (ledger.rows(job.id).length === 2 ? ledger.rows(job.id) : null), 'W2 started the job'))!;
      expect(rows.map((r) => r.pid)).toEqual([w1.pid, w2.pid]);
      expect(rows.map((r) => r.attempt)).toEqual([1, 1]);
      expect(rows.filter((r) => r.finishedAt !== null).length).toBeLessThanOrEqual(1);
    });
  }

  it('a second SIGTERM skips the drain: the job is released and the worker exits promptly despite a long drainTimeout', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    // Drain and grace far longer than the test: only the second signal can end the wait.
    const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, drainTimeout: 3_600_000, abortGrace: 3_600_000 } });
    const job = await baton.enqueue(kit.sleepy, { ms: 3_600_000 });
    await w1.waitForEvent('job:claimed', job.id);

    w1.kill('SIGTERM');
    await w1.waitForEvent('worker:stopping');
    w1.kill('SIGTERM');
    const exit = await exitWithin(w1, 60_000, 'after the second SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(eventAt(w1, 'job:released', job.id)).toBeGreaterThanOrEqual(0);

    const released = await baton.getJob(job.id);
    expect(released.state).toBe('queued');
    expect(released.attempt).toBe(0);
    expect(released.leaseOwner).toBeNull();
    expect(released.errors).toEqual([]);
    expect(ledger.rows(job.id)).toHaveLength(1);
  });

  it('a second SIGTERM with a handler that never settles (hang) does not hold the process for abortGrace', async () => {
    const { db, baton, kit, ledgerPath } = await openKitBaton();
    // Drain and grace far longer than the test: only the second signal can end the wait.
    const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, drainTimeout: 3_600_000, abortGrace: 3_600_000 } });
    const job = await baton.enqueue(kit.hang, {});
    await w1.waitForEvent('job:claimed', job.id);

    w1.kill('SIGTERM');
    await w1.waitForEvent('worker:stopping');
    w1.kill('SIGTERM');
    const exit = await exitWithin(w1, 60_000, 'after the second SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(eventAt(w1, 'job:released', job.id)).toBeGreaterThanOrEqual(0);
    expect((await baton.getJob(job.id)).state).toBe('queued');
  });
});

/** A worker not yet started, one queued job, and the worker:started and job:claimed events it emits. */
async function unstartedWorker() {
  const { baton, kit } = await openKitBaton();
  const job = await baton.enqueue(kit.sleepy, { ms: 10 });
  const worker = baton.worker({ tasks: kit.tasks });
  const events: string[] = [];
  worker.on('worker:started', () => events.push('worker:started'));
  worker.on('job:claimed', () => events.push('job:claimed'));
  return { baton, job, worker, events };
}

describe('stop() around start() (a signal during start-up)', () => {
  it('a stop() while start() writes to the store waits for it, then stops a worker that never claimed: the queued job stays queued, no worker:started, the registry row removed', async () => {
    const { baton, job, worker, events } = await unstartedWorker();
    // start() is at its first write (the registry row) when stop() comes.
    const started = worker.start();
    const summary = await worker.stop();
    await started;
    expect(summary).toEqual({ finished: 0, released: 0, abandoned: 0, unreleased: [] });
    expect(events).toEqual([]);
    expect((await baton.getJob(job.id)).state).toBe('queued');
    expect((await baton.listWorkers()).map((w) => w.id)).not.toContain(worker.id);
  });

  it('a claim in flight when stop() begins: its jobs are handed back by the shutdown — job:released, counted in the summary, queued again with the attempt not counted, no handler started', async () => {
    const { baton, kit } = await openKitBaton();
    const enqueued = await baton.enqueueMany([1, 2, 3].map(() => ({ task: kit.sleepy, payload: { ms: 10 } })));
    const ids = enqueued.map((j) => j.id);
    // The claim commits in the database, then waits here until stop() has begun.
    const { inFlight, letGo } = holdNextClaim(baton);
    const worker = baton.worker({ tasks: kit.tasks, concurrency: 5 });
    const released: number[] = [];
    const started: number[] = [];
    worker.on('job:released', (e) => released.push(e.job.id));
    worker.on('job:started', (e) => started.push(e.job.id));
    const starting = worker.start();
    await inFlight;
    const stopping = worker.stop();
    letGo();
    const summary = await stopping;
    await starting;
    expect(summary).toEqual({ finished: 0, released: 3, abandoned: 0, unreleased: [] });
    expect(released.sort((a, b) => a - b)).toEqual(ids);
    expect(started).toEqual([]);
    for (const job of enqueued) expect(await baton.getJob(job.id)).toMatchObject({ state: 'queued', attempt: job.attempt });
  });

  it('the summary counts from the moment stop() begins: a job that ends while the stop waits for a claim in flight is counted as finished', async () => {
    const { baton, worker, a, b, finishA, letGo } = await claimInFlightBesideA({});
    const stopping = worker.stop();
    const aDone = waitForEvent(worker, 'job:completed', (e) => e.job.id === a.id);
    finishA();
    await aDone; // written while the stop still waits for the claim
    letGo();
    expect(await stopping).toEqual({ finished: 1, released: 1, abandoned: 0, unreleased: [] });
    expect(await baton.getJob(b.id)).toMatchObject({ state: 'queued', attempt: 0 });
  });

  // Fails without the second hand-back in shutdown(): B's claim lands after the stop
  // released what it held, and B stays `running` under a lease no one renews.
  it('a claim that lands after the stop released its jobs is handed back too (drainTimeout 0: the stop does not wait for it)', async () => {
    // A ignores its signal: it outlives abortGrace, so the stop's own release hands it back.
    const { baton, worker, a, b, finishA, letGo } = await claimInFlightBesideA({ drainTimeout: 0, abortGrace: 0 });
    const aReleased = waitForEvent(worker, 'job:released', (e) => e.job.id === a.id);
    const stopping = worker.stop();
    await aReleased; // the stop released what it held; B's claim is still in flight
    letGo();
    expect(await stopping).toEqual({ finished: 0, released: 2, abandoned: 1, unreleased: [] });
    expect(await baton.getJob(b.id)).toMatchObject({ state: 'queued', attempt: 0 });
    expect(await baton.getJob(a.id)).toMatchObject({ state: 'queued', attempt: 0 });
    finishA();
  });

  it('a worker stopped before start() never starts: start() resolves without claiming', async () => {
    const { baton, job, worker, events } = await unstartedWorker();
    await worker.stop();
    await worker.start();
    expect(events).toEqual([]);
    expect((await baton.getJob(job.id)).state).toBe('queued');
    expect((await baton.listWorkers()).map((w) => w.id)).not.toContain(worker.id);
  });
});
