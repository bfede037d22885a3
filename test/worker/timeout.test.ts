/**
 * C20: a timeout fails the attempt while the handler (a promise that cannot be
 * killed) keeps running; attempts are counted for timeouts as for throws.
 *
 * Slot policy (src/worker/executor.ts, TimeoutError branch): on timeout the run
 * records the failed attempt at once (retry or `failed`), then keeps its
 * concurrency slot until the abandoned handler settles or `abortGrace` passes,
 * whichever comes first. A handler that ignores its signal therefore still counts
 * against `concurrency` for up to `abortGrace`, so a worker never runs more
 * handlers at once than it was configured for. Its late result is dropped: the
 * run no longer holds the job and writes nothing.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineTask, TimeoutError } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';
import { spawnWorker, type ChildHandle } from '../helpers/child.js';
import { Ledger } from '../helpers/ledger.js';
import { createKit } from '../fixtures/kit.js';

/** A promise plus its resolve function. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('C20 timeouts', () => {
  it('C20: the handler signal fires with a TimeoutError and the attempt is recorded as failed while the handler still runs', async () => {
    const baton = await openBaton();
    const reasons: unknown[] = [];
    const release = deferred();
    const settled: number[] = [];
    const slow = defineTask('slow', {
      maxAttempts: 2,
      timeout: 200,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        ctx.signal.addEventListener('abort', () => reasons.push(ctx.signal.reason));
        await release.promise; // deaf: never looks at the signal
        settled.push(ctx.job.attempt);
        return 'late';
      },
    });
    const worker = baton.worker({ tasks: [slow], concurrency: 2, pollInterval: 20, abortGrace: 600_000 });
    await worker.start();
    const failures = collectEvents(worker, 'job:failed', 2);
    const completions: unknown[] = [];
    worker.on('job:completed', (e) => completions.push(e));
    const job = await baton.enqueue(slow, null);
    const [first, second] = await failures;

    expect(reasons).toHaveLength(2);
    expect(reasons.every((r) => r instanceof TimeoutError)).toBe(true);
    expect((reasons[0] as TimeoutError).timeoutMs).toBe(200);
    expect(first!.error).toBeInstanceOf(TimeoutError);
    expect(first!.retryAt).not.toBeNull();
    expect(second!.job.attempt).toBe(2);
    expect(second!.retryAt).toBeNull();
    // Both attempts were given up on while their handlers were still running.
    expect(settled).toEqual([]);
    expect(worker.running).toBe(2);

    const slotsFree = until(() => worker.running === 0, 'both abandoned handlers released their slots');
    release.resolve();
    await slotsFree;
    expect(settled.sort()).toEqual([1, 2]);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('failed');
    expect(final.result).toBeNull();
    expect(completions).toEqual([]);
    expect(final.errors.map((e) => e.message)).toEqual(['job timed out after 200 ms', 'job timed out after 200 ms']);
  });

  it('C20: two workers, timeout 1 s, maxAttempts 2, fixed backoff 0.5 s, a deaf handler: two timed-out attempts, failed, late results dropped, no attempt 3', async () => {
    const db = tempDatabase();
    const ledgerPath = join(db.dir, 'ledger.db');
    const ledger = new Ledger(ledgerPath);
    const baton = await openBaton({ database: db.url });
    // The grace outlasts the test: an abandoned handler holds its worker's only slot
    // until the test opens the gate, so attempt 2 can only go to the other worker.
    const workerOptions = { concurrency: 1, pollInterval: 200, abortGrace: 600_000 };
    const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: workerOptions });
    const w2 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: workerOptions });
    const workers = [w1, w2];
    const kit = createKit();
    const gate = join(db.dir, 'gate');
    const job = await baton.enqueue(kit.deafTimed, { untilPath: gate, result: 'late' });
    expect(job.timeoutMs).toBe(1000);
    expect(job.maxAttempts).toBe(2);

    const firstOf = (name: string, attempt: number) =>
      Promise.any(
        workers.map((w) => w.waitFor((m) => m.type === 'event' && m.name === name && m.jobId === job.id && m.attempt === attempt, `${name} #${attempt}`)),
      ).then((message) => ({ message, by: workers.find((w) => w.messages.includes(message))! }));

    // Attempt 1 times out: aborted with reason "timeout", back to queued with a retry time.
    const claim1 = await firstOf('job:claimed', 1);
    const abort1 = await claim1.by.waitForEvent('job:aborted', job.id);
    expect(abort1.reason).toBe('timeout');
    const fail1 = await claim1.by.waitFor((m) => m.name === 'job:failed' && m.jobId === job.id && m.attempt === 1, 'job:failed #1');
    expect(fail1.message).toBe('job timed out after 1000 ms');
    expect(fail1.retryAt).not.toBeNull();
    const between = await baton.getJob(job.id);
    expect(between.errors).toHaveLength(1);
    expect(between.errors[0]!.attempt).toBe(1);
    expect(between.errors[0]!.message).toMatch(/timed out/);
    expect(between.runAt.getTime()).toBe(new Date(fail1.retryAt as string).getTime());
    expect(between.runAt.getTime()).toBeGreaterThanOrEqual(between.errors[0]!.time.getTime() + 500);
    // Read within the 500 ms backoff it is still queued; on a stalled machine the
    // other worker may already hold attempt 2.
    if (between.attempt === 1) expect(between.state).toBe('queued');

    // Attempt 2 starts on the other worker: the first one's slot is still held by
    // its abandoned handler (see the slot policy above).
    const claim2 = await firstOf('job:claimed', 2);
    expect(claim2.by).not.toBe(claim1.by);
    const fail2 = await claim2.by.waitFor((m) => m.name === 'job:failed' && m.jobId === job.id && m.attempt === 2, 'job:failed #2');
    expect(fail2.message).toBe('job timed out after 1000 ms');
    expect(fail2.retryAt).toBeNull();
    const failed = await baton.getJob(job.id);
    expect(failed.state).toBe('failed');
    expect(failed.attempt).toBe(2);
    expect(failed.errors.map((e) => e.attempt)).toEqual([1, 2]);

    // Both abandoned handlers resolve "late" (the ledger stamps finishedAt): dropped.
    writeFileSync(gate, '');
    await until(() => ledger.rows(job.id).length === 2 && ledger.rows(job.id).every((r) => r.finishedAt !== null), 'both handlers settled');
    // Control jobs after the settlements: the workers keep claiming, and by the
    // time these complete a late write or a third claim of J would have happened.
    const controls = await baton.enqueueMany([0, 1].map(() => ({ task: kit.sleepy, payload: { ms: 100 } })));
    await Promise.all(controls.map((c) => Promise.any(workers.map((w) => w.waitForEvent('job:completed', c.id)))));

    const final = await baton.getJob(job.id);
    expect(final.state).toBe('failed');
    expect(final.result).toBeNull();
    expect(final.attempt).toBe(2);
    expect(final.errors).toHaveLength(2);
    const names = (w: ChildHandle) => w.messages.filter((m) => m.jobId === job.id).map((m) => m.name);
    expect([...names(w1), ...names(w2)]).not.toContain('job:completed');
    expect([...names(w1), ...names(w2)].filter((n) => n === 'job:claimed')).toHaveLength(2);
    const rows = ledger.rows(job.id);
    expect(rows.map((r) => r.attempt)).toEqual([1, 2]);
    expect(rows[0]!.pid).toBe(claim1.by.pid);
    expect(rows[1]!.pid).toBe(claim2.by.pid);
    ledger.close();
  });

  it('C20 slot policy: on one concurrency-1 worker, attempt 2 starts only after attempt 1 settled (long abortGrace)', async () => {
    const baton = await openBaton();
    const log: string[] = [];
    const release = deferred();
    const slow = defineTask('slow', {
      maxAttempts: 2,
      timeout: 200,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        log.push(`start ${ctx.job.attempt}`);
        if (ctx.job.attempt === 1) await release.promise;
        log.push(`settled ${ctx.job.attempt}`);
        return 'late';
      },
    });
    const worker = baton.worker({ tasks: [slow], concurrency: 1, pollInterval: 20, abortGrace: 600_000 });
    worker.on('job:failed', (e) => log.push(`failed ${e.job.attempt}`));
    await worker.start();
    const failed1 = waitForEvent(worker, 'job:failed');
    const completed = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(slow, null);
    await failed1;
    // The retry is due (backoff 0) but the only slot is held: claim passes start nothing.
    for (let i = 0; i < 3; i++) await worker.loops.fetch();
    expect(log).toEqual(['start 1', 'failed 1']);
    expect(worker.running).toBe(1);

    release.resolve();
    await completed;
    expect(log).toEqual(['start 1', 'failed 1', 'settled 1', 'start 2', 'settled 2']);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('completed');
    expect(final.attempt).toBe(2);
    expect(final.result).toBe('late');
  });

  it('C20 slot policy: a handler that never settles holds the slot only until abortGrace passes', async () => {
    const baton = await openBaton();
    const log: string[] = [];
    const stuck = defineTask('stuck', {
      maxAttempts: 2,
      timeout: 200,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        log.push(`start ${ctx.job.attempt}`);
        if (ctx.job.attempt === 1) await new Promise<never>(() => undefined); // hang
        return 'second';
      },
    });
    const worker = baton.worker({ tasks: [stuck], concurrency: 1, pollInterval: 20, abortGrace: 3000 });
    worker.on('job:failed', (e) => log.push(`failed ${e.job.attempt}`));
    await worker.start();
    const completed = waitForEvent(worker, 'job:completed');
    const failed1 = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(stuck, null);
    await failed1;
    const failedAt = performance.now();
    // Claim passes while the grace runs start nothing: the hung handler holds the slot.
    // Checked only when they surely ran within the grace (it starts as the failure is
    // reported; timers never fire early), which a machine stalled for seconds would not give.
    for (let i = 0; i < 3; i++) await worker.loops.fetch();
    if (performance.now() - failedAt < 2500) expect(log).toEqual(['start 1', 'failed 1']);
    await until(() => worker.running === 0 || log.includes('start 2'), 'the abandoned handler gives up its slot');
    // A lower bound (timers never fire early): the slot was not freed before the grace.
    expect(performance.now() - failedAt).toBeGreaterThanOrEqual(2950);
    await completed;
    expect(log).toEqual(['start 1', 'failed 1', 'start 2']);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('completed');
    expect(final.attempt).toBe(2);
    expect(final.errors.map((e) => e.message)).toEqual(['job timed out after 200 ms']);
  });
});
