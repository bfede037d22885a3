/**
 * Cancellation (SPEC "Cancellation", cases.md C06): queued, running, terminal,
 * repeated, and from another process while the job runs in a third one. Events
 * are checked in order (request stored → signal aborted → recorded cancelled),
 * never by duration: how fast a cancel reaches the handler is a benchmark figure
 * (bench W4), not something a test on a shared machine can hold. Handlers that
 * must outlast a cancel wait on a gate the test opens, not on a timer.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CancelledError, type CancelResult, type Job } from 'baton-jobs';
import { spawnWorker, type ChildHandle, type ChildMessage } from '../helpers/child.js';
import { inOtherProcess } from '../helpers/client.js';
import { until, waitForEvent } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';

/** Index of the first message of `child` that is event `name` of job `jobId`; -1 when none. */
function eventIndex(child: ChildHandle, name: string, jobId: number): number {
  return child.messages.findIndex((m) => m.type === 'event' && m.name === name && m.jobId === jobId);
}

const eventsOf = (child: ChildHandle, name: string, jobId: number) => child.messages.filter((m) => m.type === 'event' && m.name === name && m.jobId === jobId);

const cancelAnswer = (message: ChildMessage) => {
  expect(message.type, JSON.stringify(message)).toBe('result');
  return message.value as { outcome: string; job: Job & { cancelRequestedAt: string | null; finishedAt: string | null } };
};

describe('cancel(id) in one process', () => {
  it('cancels a queued job at once; no handler ever runs it (0 ledger rows)', async () => {
    const { baton, kit, ledger } = await openKitBaton();
    const job = await baton.enqueue(kit.sleepy, { ms: 100 });
    const answer = await baton.cancel(job.id, 'not needed');
    expect(answer.outcome).toBe('cancelled');
    expect(answer.job.state).toBe('cancelled');
    expect(answer.job.cancelReason).toBe('not needed');
    expect(answer.job.cancelRequestedAt).toBeInstanceOf(Date);
    expect(answer.job.finishedAt).toBeInstanceOf(Date);
    expect(answer.job.attempt).toBe(0);

    // A worker started afterwards claims in id order: it runs a later job, never this one.
    const worker = baton.worker({ tasks: kit.tasks });
    const controlDone = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'hash');
    const claimedIds: number[] = [];
    worker.on('job:claimed', (e) => claimedIds.push(e.job.id));
    await worker.start();
    const control = await baton.enqueue(kit.hash, { n: 1 });
    await controlDone;
    expect(claimedIds).toEqual([control.id]);
    expect(ledger.rows(job.id)).toEqual([]);
    expect(ledger.rows(control.id)).toHaveLength(1);
    expect((await baton.getJob(job.id)).state).toBe('cancelled');
  });

  it('aborts a running job with a CancelledError carrying the reason; it ends cancelled (not failed), no retry, attempt 1', async () => {
    const { baton, kit, ledger } = await openKitBaton();
    const worker = baton.worker({ tasks: kit.tasks, concurrency: 2 });
    const order: string[] = [];
    const failures: unknown[] = [];
    worker.on('job:failed', (e) => failures.push(e));
    await worker.start();

    const claimed = waitForEvent(worker, 'job:claimed', (e) => e.job.task === 'sleepy');
    const job = await baton.enqueue(kit.sleepy, { ms: 30_000 }, { maxAttempts: 3 });
    await claimed;
    await until(() => ledger.rows(job.id).length === 1, 'the handler started');

    const aborted = waitForEvent(worker, 'job:aborted', (e) => e.job.id === job.id).then((e) => {
      order.push('aborted');
      return { reason: e.reason, at: Date.now() };
    });
    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === job.id).then((e) => {
      order.push('cancelled');
      return e;
    });
    const answer = await baton.cancel(job.id, 'user asked');
    order.push('answered');
    expect(answer.outcome).toBe('requested');
    expect(answer.job.state).toBe('running');
    expect(answer.job.cancelReason).toBe('user asked');

    const abort = await aborted;
    const done = await cancelled;
    // The abort follows the stored request; on PostgreSQL the NOTIFY sent at commit can
    // reach the worker before the caller's own await resumes, so order by cause, not by
    // which callback ran first.
    expect(order.at(-1)).toBe('cancelled');
    expect(order.slice(0, 2).sort()).toEqual(['aborted', 'answered']);
    expect(abort.at).toBeGreaterThanOrEqual(answer.job.cancelRequestedAt!.getTime());
    expect(abort.reason).toBeInstanceOf(CancelledError);
    expect((abort.reason as CancelledError).reason).toBe('user asked');
    expect(done.reason).toBe('user asked');

    const after = await baton.getJob(job.id);
    expect(after.state).toBe('cancelled');
    expect(after.attempt).toBe(1);
    expect(after.errors).toEqual([]);
    expect(after.result).toBeNull();
    expect(after.leaseOwner).toBeNull();
    expect(failures).toEqual([]);

    // No retry: the worker goes on with other work and never starts the job again.
    const controlDone = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'hash');
    await baton.enqueue(kit.hash, { n: 2 });
    await controlDone;
    expect(ledger.rows(job.id)).toHaveLength(1);
    expect((await baton.getJob(job.id)).state).toBe('cancelled');
  });

  it('leaves a finished job as it is; the answer is "unchanged" and names its state', async () => {
    const { baton, kit } = await openKitBaton();
    const worker = baton.worker({ tasks: kit.tasks });
    await worker.start();

    const completedEvent = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'hash');
    const done = await baton.enqueue(kit.hash, { n: 3 });
    await completedEvent;
    const failedEvent = waitForEvent(worker, 'job:failed', (e) => e.job.task === 'boom' && e.retryAt === null);
    const failed = await baton.enqueue(kit.boom, { message: 'broken' }, { maxAttempts: 1 });
    await failedEvent;

    for (const [job, state] of [
      [done, 'completed'],
      [failed, 'failed'],
    ] as const) {
      const before = await baton.getJob(job.id);
      expect(before.state).toBe(state);
      const answer: CancelResult = await baton.cancel(job.id, 'too late');
      expect(answer.outcome).toBe('unchanged');
      expect(answer.job.state).toBe(state);
      const after = await baton.getJob(job.id);
      expect(after).toEqual(before);
      expect(after.cancelRequestedAt).toBeNull();
      expect(after.cancelReason).toBeNull();
    }
  });

  it('is idempotent on a queued job: the second call is "unchanged" and keeps the first request time and reason', async () => {
    const { baton, kit } = await openKitBaton();
    const job = await baton.enqueue(kit.sleepy, { ms: 100 });
    const first = await baton.cancel(job.id, 'first');
    const second = await baton.cancel(job.id, 'second');
    expect(first.outcome).toBe('cancelled');
    expect(second.outcome).toBe('unchanged');
    expect(second.job.state).toBe('cancelled');
    expect(second.job.cancelRequestedAt).toEqual(first.job.cancelRequestedAt);
    expect(second.job.finishedAt).toEqual(first.job.finishedAt);
    expect(second.job.cancelReason).toBe('first');
  });

  it('is idempotent on a running job: one abort, the first request time and reason are kept', async () => {
    const { db, baton, kit, ledger } = await openKitBaton();
    // The gated handler ignores its signal and the grace outlasts the test, so the job
    // stays running (cancelling) until the test opens the gate after the second cancel.
    const worker = baton.worker({ tasks: kit.tasks, cancelGrace: 120_000 });
    const aborts: unknown[] = [];
    const cancels: unknown[] = [];
    worker.on('job:aborted', (e) => aborts.push(e.reason));
    worker.on('job:cancelled', (e) => cancels.push(e.reason));
    await worker.start();

    const claimed = waitForEvent(worker, 'job:claimed', (e) => e.job.task === 'gated');
    const gate = join(db.dir, 'gate');
    const job = await baton.enqueue(kit.gated, { path: gate });
    await claimed;
    const aborted = waitForEvent(worker, 'job:aborted', (e) => e.job.id === job.id);
    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === job.id);
    const first = await baton.cancel(job.id, 'first');
    await aborted;
    const second = await baton.cancel(job.id, 'second');
    expect(first.outcome).toBe('requested');
    expect(second.outcome).toBe('requested');
    expect(second.job.state).toBe('running');
    expect(second.job.cancelRequestedAt).toEqual(first.job.cancelRequestedAt);
    expect(second.job.cancelReason).toBe('first');

    writeFileSync(gate, '');
    await cancelled;
    const after = await baton.getJob(job.id);
    expect(after.state).toBe('cancelled');
    expect(after.cancelRequestedAt).toEqual(first.job.cancelRequestedAt);
    expect(after.cancelReason).toBe('first');
    expect(aborts).toHaveLength(1);
    expect((aborts[0] as CancelledError).reason).toBe('first');
    expect(cancels).toEqual(['first']);
    expect(ledger.rows(job.id)).toHaveLength(1);
  });
});

describe('C06: cancel from another process reaches a handler running in a third process', () => {
  it('C06: aborts A in the worker process, frees its slot for B, cancels delayed Q at once, leaves completed D as it is', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const worker = await spawnWorker({
      database: db.url,
      ledger: ledgerPath,
      worker: { concurrency: 1, heartbeatInterval: 1000, pollInterval: 200 },
    });

    const a = await baton.enqueue(kit.sleepy, { ms: 30_000 }, { maxAttempts: 3 });
    const q = await baton.enqueue(kit.sleepy, { ms: 100 }, { runAt: new Date(Date.now() + 60_000) });
    await worker.waitForEvent('job:claimed', a.id);
    await until(() => ledger.rows(a.id).length === 1, "A's handler started");

    // t=2: cancel A from a third process while B is enqueued here.
    const [answerMessage, b] = await Promise.all([
      inOtherProcess({ database: db.url, op: 'cancel', id: a.id, reason: 'from elsewhere' }),
      baton.enqueue(kit.sleepy, { ms: 100 }),
    ]);
    const answer = cancelAnswer(answerMessage);
    expect(answer.outcome).toBe('requested');

    const aborted = await worker.waitForEvent('job:aborted', a.id);
    const cancelled = await worker.waitForEvent('job:cancelled', a.id);
    const bClaimed = await worker.waitForEvent('job:claimed', b.id);
    await worker.waitForEvent('job:completed', b.id);
    expect(aborted.reason).toBe('cancelled');

    const afterA = await baton.getJob(a.id);
    // Order: request stored → signal aborted → recorded cancelled → B starts on the freed slot.
    expect(afterA.cancelRequestedAt!.getTime()).toBeLessThanOrEqual(aborted.at as number);
    expect(eventIndex(worker, 'job:aborted', a.id)).toBeLessThan(eventIndex(worker, 'job:cancelled', a.id));
    expect(eventIndex(worker, 'job:cancelled', a.id)).toBeLessThan(eventIndex(worker, 'job:claimed', b.id));
    expect(bClaimed.at as number).toBeGreaterThanOrEqual(cancelled.at as number);
    expect(afterA.state).toBe('cancelled');
    expect(afterA.attempt).toBe(1);
    expect(afterA.errors).toEqual([]);
    expect(afterA.cancelReason).toBe('from elsewhere');
    expect(eventsOf(worker, 'job:failed', a.id)).toEqual([]);
    expect(ledger.rows(a.id)).toHaveLength(1);

    // t=3: cancel Q (delayed): straight to cancelled, never run.
    const qAnswer = cancelAnswer(await inOtherProcess({ database: db.url, op: 'cancel', id: q.id }));
    expect(qAnswer.outcome).toBe('cancelled');
    expect(qAnswer.job.state).toBe('cancelled');
    expect((await baton.getJob(q.id)).state).toBe('cancelled');

    // t=5: D completes, then a cancel is refused as "unchanged" and D stays completed.
    const d = await baton.enqueue(kit.sleepy, { ms: 100 });
    await worker.waitForEvent('job:completed', d.id);
    const dAnswer = cancelAnswer(await inOtherProcess({ database: db.url, op: 'cancel', id: d.id }));
    expect(dAnswer.outcome).toBe('unchanged');
    expect(dAnswer.job.state).toBe('completed');
    const afterD = await baton.getJob(d.id);
    expect(afterD.state).toBe('completed');
    expect(afterD.cancelRequestedAt).toBeNull();

    expect(ledger.rows(q.id)).toEqual([]);
    expect(ledger.rows(b.id)).toHaveLength(1);
    expect(ledger.rows(a.id)).toHaveLength(1);
  });

  it('C06 (deaf handler): recorded cancelled after cancelGrace, its late result discarded, not retried', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const worker = await spawnWorker({
      database: db.url,
      ledger: ledgerPath,
      worker: { concurrency: 1, cancelGrace: 500, pollInterval: 200 },
    });
    // The deaf handler ignores its signal and returns only once the test opens its
    // gate (a file), after the cancel has been recorded: no duration races the
    // cancel's child process, however slowly it starts.
    const gate = join(db.dir, 'deaf-gate');
    const job = await baton.enqueue(kit.gated, { path: gate }, { maxAttempts: 3 });
    await worker.waitForEvent('job:claimed', job.id);
    await until(() => ledger.rows(job.id).length === 1, 'the deaf handler started');

    const answer = cancelAnswer(await inOtherProcess({ database: db.url, op: 'cancel', id: job.id, reason: 'stop it' }));
    expect(answer.outcome).toBe('requested');
    const aborted = await worker.waitForEvent('job:aborted', job.id);
    const cancelled = await worker.waitForEvent('job:cancelled', job.id);
    expect(aborted.reason).toBe('cancelled');
    expect(eventIndex(worker, 'job:aborted', job.id)).toBeLessThan(eventIndex(worker, 'job:cancelled', job.id));
    const atCancel = await baton.getJob(job.id);
    expect(atCancel.state).toBe('cancelled');
    // Recorded cancelled while the handler was still running (it ignores the signal).
    expect(ledger.rows(job.id)[0]!.finishedAt).toBeNull();

    // The handler returns afterwards; its result is dropped.
    writeFileSync(gate, '');
    const row = await until(() => {
      const first = ledger.rows(job.id)[0];
      return first?.finishedAt != null ? first : undefined;
    }, 'the deaf handler returned');
    expect(row!.finishedAt!).toBeGreaterThan(cancelled.at as number);
    // The worker keeps working (and would have written the late result by now).
    const control = await baton.enqueue(kit.hash, { n: 4 });
    await worker.waitForEvent('job:completed', control.id);

    const after = await baton.getJob(job.id);
    expect(after.state).toBe('cancelled');
    expect(after.result).toBeNull();
    expect(after.attempt).toBe(1);
    expect(after.errors).toEqual([]);
    expect(after.cancelReason).toBe('stop it');
    expect(eventsOf(worker, 'job:completed', job.id)).toEqual([]);
    expect(eventsOf(worker, 'job:failed', job.id)).toEqual([]);
    expect(eventsOf(worker, 'job:claimed', job.id)).toHaveLength(1);
    expect(ledger.rows(job.id)).toHaveLength(1);
  });
});
