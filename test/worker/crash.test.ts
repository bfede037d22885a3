/**
 * Crash recovery (SPEC "A lease that expired makes the job claimable again; that
 * counts as an attempt", cases.md C03c and C10): a worker process is SIGKILLed
 * mid-job; another worker takes the job only after the recorded lease expiry,
 * counts the lost attempt, and fails the job when no attempt is left.
 */
import { describe, expect, it } from 'vitest';
import type { Baton } from 'baton-jobs';
import { spawnWorker } from '../helpers/child.js';
import { until } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';

/**
 * leaseTtl 4 s, heartbeat 0.3 s, rescue pass every 0.2 s: W1 keeps its lease through
 * a 3.7 s stall of a busy machine (a shorter lease let W1 rescue and re-claim its
 * own job before the kill), and the test waits for the lease to run out only once.
 */
const WORKER = { concurrency: 1, leaseTtl: 4000, heartbeatInterval: 300, rescueInterval: 200, pollInterval: 200 };

/** No job is left `running` under a lease that has already expired. */
async function expectNoExpiredRunning(baton: Baton): Promise<void> {
  const now = Date.now();
  const running = await baton.listJobs({ state: 'running' });
  expect(running.filter((j) => j.leaseExpiresAt === null || j.leaseExpiresAt.getTime() < now)).toEqual([]);
}

/** Starts W1, lets it claim `enqueue()`'s job, starts idle W2, then SIGKILLs W1; returns the job's recorded lease expiry. */
async function killMidJob(ctx: Awaited<ReturnType<typeof openKitBaton>>, enqueue: () => Promise<{ id: number }>) {
  const { db, baton, ledger, ledgerPath } = ctx;
  const w1 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: WORKER });
  const job = await enqueue();
  await w1.waitForEvent('job:claimed', job.id);
  await until(() => ledger.rows(job.id).length === 1, 'the handler started in W1');
  const w2 = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: WORKER });
  w1.kill('SIGKILL');
  expect(await w1.exited).toEqual({ code: null, signal: 'SIGKILL' });
  // W1 is dead: this is the final lease expiry (no heartbeat can extend it now).
  const held = await baton.getJob(job.id);
  expect(held.state).toBe('running');
  expect(held.attempt).toBe(1);
  expect(held.leaseOwner).toBe(w1.messages.find((m) => m.type === 'ready')!.workerId);
  return { job, w1, w2, leaseExpiresAt: held.leaseExpiresAt!.getTime() };
}

describe('C03c / C10b: a worker SIGKILLed mid-job', () => {
  it('C03c/C10b: another worker takes the job only after the recorded lease expiry, as attempt 2 (counted), and completes it', async () => {
    const ctx = await openKitBaton();
    const { baton, kit, ledger } = ctx;
    const { job, w1, w2, leaseExpiresAt } = await killMidJob(ctx, () => baton.enqueue(kit.hang, { untilAttempt: 1, thenMs: 100 }, { maxAttempts: 3 }));

    const claimed = await w2.waitForEvent('job:claimed', job.id);
    expect(claimed.attempt).toBe(2);
    // Not before the lease expired (how soon after is the rescue interval's business,
    // not something a busy machine lets a test assert).
    expect(claimed.at as number).toBeGreaterThan(leaseExpiresAt);
    await w2.waitForEvent('job:completed', job.id);

    const done = await baton.getJob(job.id);
    expect(done.state).toBe('completed');
    expect(done.attempt).toBe(2);
    expect(done.result).toEqual({ attempt: 2 });
    expect(done.startedAt!.getTime()).toBeGreaterThan(leaseExpiresAt);
    expect(done.errors).toHaveLength(1);
    expect(done.errors[0]!.attempt).toBe(1);
    expect(done.errors[0]!.message).toMatch(/lease expired/);
    const rows = ledger.rows(job.id);
    expect(rows.map((r) => [r.attempt, r.pid])).toEqual([
      [1, w1.pid],
      [2, w2.pid],
    ]);
    expect(rows[0]!.finishedAt).toBeNull();
    expect(rows[1]!.finishedAt).not.toBeNull();
    await expectNoExpiredRunning(baton);
  });
});

describe('C10a: a crash on the last allowed attempt', () => {
  it('C10a: maxAttempts 1 + hang + SIGKILL → failed with a lease-expired error, never started again', async () => {
    const ctx = await openKitBaton();
    const { baton, kit, ledger } = ctx;
    const { job, w2, leaseExpiresAt } = await killMidJob(ctx, () => baton.enqueue(kit.hang, {}, { maxAttempts: 1 }));

    const failed = (await until(async () => {
      const j = await baton.getJob(job.id);
      return j.state === 'failed' ? j : undefined;
    }, 'the job is failed'))!;
    expect(failed.attempt).toBe(1);
    expect(failed.finishedAt!.getTime()).toBeGreaterThan(leaseExpiresAt);
    expect(failed.leaseOwner).toBeNull();
    expect(failed.errors).toHaveLength(1);
    expect(failed.errors[0]!.attempt).toBe(1);
    expect(failed.errors[0]!.message).toMatch(/lease expired/);

    // W2 goes on working and never starts the failed job.
    const control = await baton.enqueue(kit.hash, { n: 1 });
    await w2.waitForEvent('job:completed', control.id);
    expect(w2.messages.filter((m) => m.type === 'event' && m.jobId === job.id)).toEqual([]);
    expect(ledger.rows(job.id)).toHaveLength(1);
    expect((await baton.getJob(job.id)).state).toBe('failed');
    await expectNoExpiredRunning(baton);
  });
});
