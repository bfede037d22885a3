/**
 * Fencing (SPEC "Every write about a running job is fenced by the lease token",
 * cases.md C08): a run whose lease was taken over cannot complete, fail or
 * checkpoint the job; its late write is dropped and reported. Two ways: two live
 * workers where the first blocks its event loop past the lease (in a child process,
 * so this process keeps running), and the Store directly with simulated time.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WorkerEvents } from 'baton-jobs';
import { spawnWorker } from '../helpers/child.js';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';

describe('C08: a worker whose event loop was blocked past its lease', () => {
  it('C08: W2 takes the job over (attempt 2) and completes it; W1\'s late completion is dropped (write:dropped, lease:lost), one job:completed in all', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const timing = { heartbeatInterval: 200, rescueInterval: 100, pollInterval: 100 };
    const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, leaseTtl: 1000, ...timing } });
    // Attempt 1 blocks W1's event loop (no heartbeat) until the test opens the gate,
    // after W2 has completed the job; later attempts take 300 ms.
    const gate = join(db.dir, 'unblock-w1');
    const job = await baton.enqueue(kit.block, { untilPath: gate, onAttempt: 1, otherMs: 300 }, { maxAttempts: 3 });
    await w1.waitForEvent('job:claimed', job.id);

    // W2 lives in this process (its loop is not blocked). Its own lease is long, so a
    // stall of this busy process cannot cost it the job.
    const w2 = baton.worker({ tasks: kit.tasks, concurrency: 1, leaseTtl: 30_000, ...timing });
    const w2Completed: Array<WorkerEvents['job:completed']> = [];
    w2.on('job:completed', (e) => w2Completed.push(e));
    const w2Claimed = waitForEvent(w2, 'job:claimed', (e) => e.job.id === job.id);
    const w2Done = waitForEvent(w2, 'job:completed', (e) => e.job.id === job.id);
    await w2.start();
    const claimed = await w2Claimed;
    expect(claimed.job.attempt).toBe(2);
    const completed = await w2Done;
    expect(completed.result).toEqual({ by: process.pid, attempt: 2 });
    writeFileSync(gate, '');

    // W1 unblocks, finishes its handler, and its completion is refused by the fencing token.
    const dropped = await w1.waitForEvent('write:dropped', job.id);
    const lost = await w1.waitForEvent('lease:lost', job.id);
    expect(dropped.op).toBe('jobComplete');
    const [w1Row, w2Row] = ledger.rows(job.id);
    expect(w1Row).toMatchObject({ attempt: 1, pid: w1.pid });
    expect(w1Row!.finishedAt).not.toBeNull(); // W1's handler did return a result…
    expect(w2Row).toMatchObject({ attempt: 2, pid: process.pid });
    // …and then reported the lost lease (how soon is no test's business on a busy machine).
    expect(lost.at as number).toBeGreaterThanOrEqual(w1Row!.finishedAt!);

    const after = await baton.getJob(job.id);
    expect(after.state).toBe('completed');
    expect(after.attempt).toBe(2);
    expect(after.result).toEqual({ by: process.pid, attempt: 2 }); // not overwritten by W1
    expect(after.errors).toHaveLength(1);
    expect(after.errors[0]!.message).toMatch(/lease expired/);
    expect(w1.messages.filter((m) => m.type === 'event' && m.name === 'job:completed')).toEqual([]);
    expect(w2Completed.filter((e) => e.job.id === job.id)).toHaveLength(1);
    expect(ledger.rows(job.id)).toHaveLength(2);
  });

  it('C08 control: a block shorter than the lease (three missed heartbeats) is tolerated: no takeover, attempt 1', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    // The lease outlasts the 1.7 s block by 6 s, so a busy machine delaying the next
    // heartbeat cannot turn the control into a takeover.
    const timing = { leaseTtl: 8000, heartbeatInterval: 500, rescueInterval: 100, pollInterval: 100 };
    const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, ...timing } });
    const job = await baton.enqueue(kit.block, { ms: 1700, onAttempt: 1, otherMs: 300 }, { maxAttempts: 3 });
    await w1.waitForEvent('job:claimed', job.id);

    const w2 = baton.worker({ tasks: kit.tasks, concurrency: 1, ...timing });
    const w2Claims: number[] = [];
    w2.on('job:claimed', (e) => w2Claims.push(e.job.id));
    await w2.start();
    const completed = await w1.waitForEvent('job:completed', job.id);
    expect(completed.result).toEqual({ by: w1.pid, attempt: 1 });

    const after = await baton.getJob(job.id);
    expect(after.state).toBe('completed');
    expect(after.attempt).toBe(1);
    expect(after.errors).toEqual([]);
    expect(after.result).toEqual({ by: w1.pid, attempt: 1 });
    expect(w2Claims).toEqual([]);
    expect(w1.messages.filter((m) => m.type === 'event' && (m.name === 'lease:lost' || m.name === 'write:dropped'))).toEqual([]);
    expect(ledger.rows(job.id)).toHaveLength(1);
  });
});

describe('C08 (store): every write about a running job is fenced by the lease token', () => {
  it('C08: after the lease expired and another claim, the old token changes nothing; the new token works', async () => {
    const baton = await openBaton();
    const store = baton.store;
    const job = await baton.enqueue('fenced', { n: 1 }, { maxAttempts: 3 });
    const claim = { tasks: ['fenced'], queues: ['default'], limit: 1, leaseMs: 1000 };
    const t0 = job.runAt.getTime() + 10;

    const [first] = await store.jobClaim({ ...claim, workerId: 'w1', now: t0 });
    expect(first).toMatchObject({ id: job.id, attempt: 1, state: 'running', leaseOwner: 'w1' });
    expect(await store.jobCheckpoint({ id: job.id, token: first!.leaseToken, checkpoint: '{"step":1}' })).toBe(true);
    expect(await store.jobProgress({ id: job.id, token: first!.leaseToken, progress: { current: 1, total: 3 } })).toBe(true);

    // Still leased just before expiry: nothing to rescue, nothing to claim.
    expect(await store.jobRescueExpired({ now: t0 + 999 })).toEqual({ requeued: [], failed: [], cancelled: [] });
    expect(await store.jobClaim({ ...claim, workerId: 'w2', now: t0 + 999 })).toEqual([]);
    // Expired: rescued (the attempt counts), then claimed by w2 with a new token.
    expect(await store.jobRescueExpired({ now: t0 + 1001 })).toEqual({ requeued: [job.id], failed: [], cancelled: [] });
    const [second] = await store.jobClaim({ ...claim, workerId: 'w2', now: t0 + 1001 });
    expect(second).toMatchObject({ id: job.id, attempt: 2, leaseOwner: 'w2', checkpoint: { step: 1 } });
    expect(second!.leaseToken).not.toBe(first!.leaseToken);

    const before = await baton.getJob(job.id);
    const old = { id: job.id, token: first!.leaseToken };
    const error = { attempt: 1, time: t0 + 1100, message: 'late failure', stack: null };
    expect((await store.jobCompleteMany({ items: [{ ...old, result: '"late"' }], now: t0 + 1100 })).completed).toEqual([]);
    expect(await store.jobFail({ ...old, error, retryAt: t0 + 5000, now: t0 + 1100 })).toBe(false);
    expect(await store.jobFail({ ...old, error, retryAt: null, now: t0 + 1100 })).toBe(false);
    expect(await store.jobCheckpoint({ ...old, checkpoint: '{"step":99}' })).toBe(false);
    expect(await store.jobProgress({ ...old, progress: { current: 99 } })).toBe(false);
    expect(await store.jobFinishCancelled({ ...old, now: t0 + 1100 })).toBe(false);
    expect(await store.jobRelease({ leases: [old], now: t0 + 1100 })).toEqual([]);
    expect(await store.leaseExtendMany({ owner: 'w1', leases: [old], leaseMs: 1000, now: t0 + 1100 })).toEqual({ lost: [job.id], cancelRequested: [] });
    expect(await baton.getJob(job.id)).toEqual(before);

    // The current run's writes go through.
    const current = { id: job.id, token: second!.leaseToken };
    expect(await store.leaseExtendMany({ owner: 'w2', leases: [current], leaseMs: 1000, now: t0 + 1200 })).toEqual({ lost: [], cancelRequested: [] });
    expect(await store.jobCheckpoint({ ...current, checkpoint: '{"step":2}' })).toBe(true);
    expect(await store.jobProgress({ ...current, progress: { current: 2, total: 3 } })).toBe(true);
    // In one batch with the stale completion, only the current token's is written.
    expect(
      await store.jobCompleteMany({
        items: [
          { ...old, result: '"late"' },
          { ...current, result: '{"by":"w2"}' },
        ],
        now: t0 + 1300,
      }),
    ).toEqual({ completed: [job.id], enqueued: [] });
    // Once completed, neither token writes again.
    expect((await store.jobCompleteMany({ items: [{ ...current, result: '"again"' }], now: t0 + 1400 })).completed).toEqual([]);
    expect(await store.jobFail({ ...current, error, retryAt: null, now: t0 + 1400 })).toBe(false);

    const after = await baton.getJob(job.id);
    expect(after).toMatchObject({
      state: 'completed',
      attempt: 2,
      result: { by: 'w2' },
      checkpoint: { step: 2 },
      progress: { current: 2, total: 3 },
      leaseOwner: null,
    });
    expect(after.finishedAt!.getTime()).toBe(t0 + 1300);
    expect(after.errors.map((e) => e.message)).toEqual([expect.stringMatching(/lease expired/)]);
  });
});
