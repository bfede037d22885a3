import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LeaseLostError, LockBusyError, sleep } from 'baton-jobs';
import { spawnTs, type ChildHandle, type ChildMessage } from '../helpers/child.js';
import { openBaton, tempDatabase } from '../helpers/db.js';

const lockProcess = fileURLToPath(new URL('../fixtures/lock-process.ts', import.meta.url));

describe('leases in the store', () => {
  it('acquire when free or expired only; the token grows on every acquire; renew and release are fenced by the token', async () => {
    const { store } = await openBaton();
    const t0 = 1_000_000;
    const a = await store.leaseAcquire({ name: 'L', owner: 'A', ttlMs: 100, now: t0 });
    expect(a).toEqual({ acquired: true, token: 1, expiresAt: t0 + 100 });
    // Live: refused, naming the holder (even for the same owner).
    expect(await store.leaseAcquire({ name: 'L', owner: 'B', ttlMs: 100, now: t0 + 50 })).toEqual({ acquired: false, owner: 'A', expiresAt: t0 + 100 });
    expect(await store.leaseAcquire({ name: 'L', owner: 'A', ttlMs: 100, now: t0 + 50 })).toMatchObject({ acquired: false });
    expect(await store.leaseRenew({ name: 'L', owner: 'A', token: 1, ttlMs: 100, now: t0 + 60 })).toBe(true);
    expect((await store.leaseGet({ name: 'L' }))?.expiresAt).toBe(t0 + 160);
    // Expired: B takes it with a greater token; A can neither renew nor release it.
    const b = await store.leaseAcquire({ name: 'L', owner: 'B', ttlMs: 100, now: t0 + 160 });
    expect(b).toEqual({ acquired: true, token: 2, expiresAt: t0 + 260 });
    expect(await store.leaseRenew({ name: 'L', owner: 'A', token: 1, ttlMs: 100, now: t0 + 170 })).toBe(false);
    expect(await store.leaseRelease({ name: 'L', owner: 'A', token: 1 })).toBe(false);
    expect(await store.leaseGet({ name: 'L' })).toEqual({ name: 'L', owner: 'B', token: 2, expiresAt: t0 + 260 });
    // Released: free at once, and the token still grows.
    expect(await store.leaseRelease({ name: 'L', owner: 'B', token: 2 })).toBe(true);
    expect(await store.leaseGet({ name: 'L' })).toEqual({ name: 'L', owner: null, token: 2, expiresAt: null });
    expect(await store.leaseAcquire({ name: 'L', owner: 'C', ttlMs: 100, now: t0 + 170 })).toMatchObject({ acquired: true, token: 3 });
    expect(await store.leaseGet({ name: 'other' })).toBeNull();
  });

  it('twenty concurrent acquires of a free lease: exactly one wins', async () => {
    const db = tempDatabase();
    const batons = await Promise.all([0, 1, 2, 3].map(() => openBaton({ database: db.url })));
    const now = Date.now();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => batons[i % 4]!.store.leaseAcquire({ name: 'race', owner: `o${i}`, ttlMs: 10_000, now })),
    );
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
    expect((await batons[0]!.store.leaseGet({ name: 'race' }))?.token).toBe(1);
  });
});

describe('withLock in one process', () => {
  it('hands fn the token, releases on return and on throw; busy without wait → LockBusyError naming holder and until when', async () => {
    const db = tempDatabase();
    const [one, two] = [await openBaton({ database: db.url }), await openBaton({ database: db.url })];
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    let leave!: () => void;
    const held = one.withLock('jobs:report', { ttl: 5000 }, async ({ fencingToken }) => {
      inside();
      await new Promise<void>((resolve) => (leave = resolve));
      return fencingToken;
    });
    await entered;
    const busy = await two.withLock('jobs:report', { ttl: 5000 }, async () => 'never').catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(LockBusyError);
    expect((busy as LockBusyError).code).toBe('lock_busy');
    expect((busy as LockBusyError).holder).toMatch(/:\d+:/);
    expect((busy as Error).message).toMatch(/lock "jobs:report" is held by .+ until \d{4}-\d\d-\d\dT/);
    leave();
    const first = await held;
    // Released on return: the other takes it at once, with a greater token.
    const second = await two.withLock('jobs:report', { ttl: 5000 }, async ({ fencingToken }) => fencingToken);
    expect(second).toBeGreaterThan(first);
    // Released on throw too.
    await expect(one.withLock('jobs:report', { ttl: 5000 }, async () => Promise.reject(new Error('inner')))).rejects.toThrow('inner');
    expect((await one.store.leaseGet({ name: 'jobs:report' }))?.owner).toBeNull();
  });

  it('with wait: takes the lock once the holder releases it; a timeout → LockBusyError; the caller signal ends the wait', async () => {
    const db = tempDatabase();
    const [one, two] = [await openBaton({ database: db.url }), await openBaton({ database: db.url })];
    const order: string[] = [];
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    let leave!: () => void;
    const held = one.withLock('w', { ttl: 5000 }, async () => {
      inside();
      await new Promise<void>((resolve) => (leave = resolve));
      order.push('first released');
    });
    await entered;
    await expect(two.withLock('w', { ttl: 5000, wait: { timeout: 50 } }, async () => 'x')).rejects.toBeInstanceOf(LockBusyError);
    const controller = new AbortController();
    const aborted = two.withLock('w', { ttl: 5000, wait: { timeout: 60_000, signal: controller.signal } }, async () => 'x').catch((e: unknown) => e);
    controller.abort(new Error('caller gave up'));
    expect(((await aborted) as Error).message).toBe('caller gave up');
    const waiting = two.withLock('w', { ttl: 5000, wait: { timeout: 30_000 } }, async () => order.push('second ran'));
    await sleep(30);
    leave();
    await held;
    await waiting;
    expect(order).toEqual(['first released', 'second ran']);
  });

  it('bad options are ConfigErrors', async () => {
    const baton = await openBaton();
    await expect(baton.withLock('x', { ttl: 5 }, async () => 1)).rejects.toMatchObject({ code: 'config' });
    await expect(baton.withLock('', { ttl: 1000 }, async () => 1)).rejects.toMatchObject({ code: 'config' });
  });
});

describe('withLock across processes', () => {
  const spawnLock = (config: Record<string, unknown>): ChildHandle => spawnTs(lockProcess, [JSON.stringify(config)]);
  /** The child's report once it exited and its stdout was read to the end ('close'). */
  const finished = (child: ChildHandle) =>
    new Promise<ChildMessage>((resolve, reject) => {
      const read = () => {
        const done = child.messages.find((m) => m.type === 'done');
        if (done) resolve(done);
        else reject(new Error(`child ${child.pid} ended without a report; stderr:\n${child.stderr}`));
      };
      if (child.process.exitCode !== null && child.process.stdout!.readableEnded) read();
      else child.process.once('close', read);
    });

  it('two processes contend: one holds, the other waits; the second holder sees a greater fencing token', async () => {
    const db = tempDatabase();
    await (await openBaton({ database: db.url })).close();
    // A holder releases when done, so a long ttl costs nothing and survives a busy machine.
    const a = spawnLock({ database: db.url, name: 'contended', ttl: 30_000, holdMs: 800, waitMs: 90_000 });
    const b = spawnLock({ database: db.url, name: 'contended', ttl: 30_000, holdMs: 800, waitMs: 90_000 });
    const [doneA, doneB] = await Promise.all([finished(a), finished(b)]);
    expect([doneA.outcome, doneB.outcome]).toEqual(['ok', 'ok']);
    const holds = [a, b]
      .map((c) => ({ acquired: c.messages.find((m) => m.type === 'acquired')!, done: c.messages.find((m) => m.type === 'done')! }))
      .sort((x, y) => (x.acquired.at as number) - (y.acquired.at as number));
    expect(holds[1]!.acquired.token as number).toBeGreaterThan(holds[0]!.acquired.token as number);
    // Never held at once: the second acquired only after the first finished its hold.
    const firstUnblocked = [a, b].find((c) => c.messages.find((m) => m.type === 'acquired') === holds[0]!.acquired)!;
    expect(holds[1]!.acquired.at as number).toBeGreaterThanOrEqual(firstUnblocked.messages.find((m) => m.type === 'unblocked')!.at as number);
  });

  it('a holder that stops renewing (event loop blocked past the ttl) has its signal aborted with LeaseLostError and cannot release the newer holder\'s lease', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    // The first process stays frozen until this one holds the lock; then it holds on
    // (for a minute, unless its signal aborts) and must find its lease lost.
    const gate = join(db.dir, 'unfreeze');
    const frozen = spawnLock({ database: db.url, name: 'fragile', ttl: 600, blockUntilPath: gate, holdMs: 60_000 });
    const first = await frozen.waitFor((m) => m.type === 'acquired', 'first acquired');
    // While the first process is frozen, this one waits for the lease to expire and takes it.
    let aborted = false;
    const taken = baton.withLock('fragile', { ttl: 60_000, wait: { timeout: 60_000 } }, async ({ fencingToken, signal }) => {
      writeFileSync(gate, '');
      const report = await finished(frozen);
      aborted = signal.aborted;
      return { fencingToken, report, lease: await baton.store.leaseGet({ name: 'fragile' }) };
    });
    const { fencingToken, report, lease } = await taken;
    expect(fencingToken).toBeGreaterThan(first.token as number);
    expect(frozen.messages.find((m) => m.type === 'aborted')).toMatchObject({ reason: 'lease_lost' });
    expect(report).toMatchObject({ outcome: 'error', code: 'lease_lost' });
    // Its release at the end was refused: the lease is still ours.
    expect(lease).toMatchObject({ token: fencingToken, owner: expect.stringMatching(new RegExp(`:${process.pid}:`)) });
    expect(aborted).toBe(false);
    expect(new LeaseLostError()).toBeInstanceOf(Error);
  });
});
