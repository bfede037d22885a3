import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { StoreError } from 'baton-jobs';
import { instrumentStore } from '../../src/store/instrumented.js';
import type { Store, StoreChange, WorkerRegistration } from '../../src/store/store.js';
import { claim, insert, newJob, T0, type Harness } from './harness.js';

const registration = (overrides: Partial<WorkerRegistration> = {}): WorkerRegistration => ({
  id: 'w1',
  host: 'host-1',
  pid: 4321,
  startedAt: T0 - 5000,
  concurrency: 8,
  queues: ['default', 'mail'],
  tasks: ['t'],
  running: [],
  ...overrides,
});

/** A listener whose calls can be awaited. */
export function recorder() {
  const calls: Array<StoreChange | undefined> = [];
  let wake: () => void = () => undefined;
  let woken = new Promise<void>((resolve) => (wake = resolve));
  return {
    calls,
    listener: (change?: StoreChange) => {
      calls.push(change);
      wake();
    },
    /** Resolves at the first call (made since the recorder was created). */
    get called() {
      return woken;
    },
    reset() {
      woken = new Promise<void>((resolve) => (wake = resolve));
    },
  };
}

/**
 * Runs `write` (a committed change, another connection) again and again until
 * `called` resolves: a driver may need a moment before its watch is in place
 * (PostgreSQL opens a LISTEN connection), and nothing says when it is ready. Each
 * round waits for the write itself, never for a fixed time; the loop ends at the
 * first call. The deadline only turns a hang into a failure.
 */
export async function writeUntilCalled(called: Promise<void>, write: (round: number) => Promise<unknown>, rounds = Infinity): Promise<void> {
  let done = false;
  void called.then(() => (done = true));
  const deadline = Date.now() + 30_000;
  for (let round = 0; !done && round < rounds; round++) {
    if (Date.now() > deadline) throw new Error(`no change was reported after ${round} writes by another store instance`);
    await write(round);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await called;
}

/** Migrating, the worker registry, the database's clock, change notifications, and closing. */
export function workerTests(h: Harness): void {
  describe('worker registry', () => {
    it('workerUpsert creates and refreshes the row; workerList shows the unexpired ones by id', async () => {
      const { store } = await h.setup();
      await store.workerUpsert({ worker: registration({ id: 'w2' }), ttlMs: 10_000, now: T0 });
      await store.workerUpsert({ worker: registration(), ttlMs: 10_000, now: T0 });
      expect(await store.workerList({ now: T0 + 1 })).toEqual([
        { ...registration(), lastHeartbeatAt: T0, expiresAt: T0 + 10_000 },
        { ...registration({ id: 'w2' }), lastHeartbeatAt: T0, expiresAt: T0 + 10_000 },
      ]);

      // A heartbeat refreshes the times, the concurrency, the queues and the running ids.
      await store.workerUpsert({ worker: registration({ running: [3, 1, 2], concurrency: 2, queues: ['q'] }), ttlMs: 10_000, now: T0 + 9000 });
      const [w1, w2] = await store.workerList({ now: T0 + 9001 });
      expect(w1).toEqual({ ...registration({ running: [3, 1, 2], concurrency: 2, queues: ['q'] }), lastHeartbeatAt: T0 + 9000, expiresAt: T0 + 19_000 });
      expect(w2?.id).toBe('w2');

      // Expired at expiresAt.
      expect((await store.workerList({ now: T0 + 10_000 })).map((w) => w.id)).toEqual(['w1']);
      expect(await store.workerList({ now: T0 + 19_000 })).toEqual([]);
    });

    it('workerDelete removes the row once; unknown → false', async () => {
      const { store } = await h.setup();
      await store.workerUpsert({ worker: registration(), ttlMs: 10_000, now: T0 });
      expect(await store.workerDelete({ id: 'w1' })).toBe(true);
      expect(await store.workerList({ now: T0 })).toEqual([]);
      expect(await store.workerDelete({ id: 'w1' })).toBe(false);
      // Registering again after a delete works.
      await store.workerUpsert({ worker: registration(), ttlMs: 10_000, now: T0 + 1 });
      expect((await store.workerList({ now: T0 + 1 })).map((w) => w.id)).toEqual(['w1']);
    });
  });

  describe('migrate', () => {
    it('two instances migrating a fresh database at once both succeed; migrating again is a no-op', async () => {
      const db = h.fresh();
      const [one, two] = await Promise.all([db.open(), db.open()]);
      expect(one.driver).toBe(h.name);
      await Promise.all([one.migrate(), two.migrate()]);
      const job = await insert(one);
      await two.migrate();
      await one.migrate();
      expect(await two.jobGet({ id: job.id })).toEqual(job);
      const three = await db.open();
      await three.migrate();
      expect((await three.jobList({ limit: 10 })).map((j) => j.id)).toEqual([job.id]);
    });
  });

  describe('schemaCheck', () => {
    it('refuses a database without the schema and creates nothing; passes once migrated', async () => {
      const db = h.fresh();
      const reader = await db.open();
      await expect(reader.schemaCheck()).rejects.toThrow(/has no Baton schema.*baton migrate/);
      await expect(reader.schemaCheck()).rejects.toThrow(/has no Baton schema/);
      const writer = await db.open();
      await writer.migrate();
      await reader.schemaCheck();
      await writer.schemaCheck();
    });
  });

  describe('clock, clockSync', () => {
    it("clockSync measures the database's offset; clock.now() is this host's time plus that offset", async () => {
      const { store } = await h.setup();
      const reading = await store.clockSync();
      expect(Number.isInteger(reading.offsetMs)).toBe(true);
      expect(reading.roundTripMs).toBeGreaterThanOrEqual(0);
      // The test database runs on a clock that agrees with this host's (a unit or
      // sign error would be off by years).
      expect(Math.abs(reading.offsetMs)).toBeLessThan(1000);
      const before = Date.now();
      const now = store.clock.now();
      const after = Date.now();
      // PostgreSQL carries the server's time on the monotonic clock (ServerClock): it agrees
      // with this host's time plus the offset, which is rounded to a whole ms, within 2 ms.
      expect(now).toBeGreaterThanOrEqual(before + reading.offsetMs - 2);
      expect(now).toBeLessThanOrEqual(after + reading.offsetMs + 2);
    });
  });

  describe('watchChanges', () => {
    /**
     * The poll interval the watches below run with: the safety-net poll (SQLite's) never
     * comes within a test, so only the push (SQLite's WAL watch, PostgreSQL's NOTIFY) can
     * wake the listener.
     */
    const NO_POLL_MS = 60_000;

    it('a job enqueued by another store instance wakes the listener (without the poll)', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      const seen = recorder();
      const stop = store.watchChanges({ intervalMs: NO_POLL_MS, listener: seen.listener });
      try {
        await writeUntilCalled(seen.called, () => insert(other));
        expect(seen.calls.length).toBeGreaterThan(0);
      } finally {
        stop();
      }
    });

    it('a single change committed right after watchChanges returns is reported, even before a LISTEN connection is up (without the poll)', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      await insert(other); // the other instance's pool is warm: its next commit lands within a ms or two
      const seen = recorder();
      const stop = store.watchChanges({ intervalMs: NO_POLL_MS, listener: seen.listener });
      try {
        await insert(other); // on PostgreSQL most likely before this store's LISTEN took effect: its NOTIFY reaches no one
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the change was never reported')), 30_000)));
        await Promise.race([seen.called, bound]).finally(() => clearTimeout(timer));
        expect(seen.calls.length).toBeGreaterThan(0);
      } finally {
        stop();
      }
    });

    it('a cancel request stored by another instance wakes the listener (without the poll); a change that names it names the job and reason', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      // Every job is running before the watch starts, so only the cancel requests can wake it.
      const count = 1000; // cancels to make while the watch may still be starting (the claim limit is 1..1000)
      await store.jobInsertMany({ jobs: Array.from({ length: count }, () => newJob()), now: T0 });
      const jobs = await claim(store, { limit: count });
      expect(jobs).toHaveLength(count);
      const seen = recorder();
      const stop = store.watchChanges({ intervalMs: NO_POLL_MS, listener: seen.listener });
      const cancelled: number[] = [];
      try {
        await writeUntilCalled(
          seen.called,
          async (round) => {
            const id = jobs[round]!.id;
            cancelled.push(id);
            expect((await other.jobCancel({ id, reason: `reason ${id}`, now: T0 + 1 }))?.outcome).toBe('requested');
          },
          count,
        );
        for (const change of seen.calls) {
          if (change?.cancel) {
            expect(cancelled).toContain(change.cancel.id);
            expect(change.cancel).toEqual({ id: change.cancel.id, reason: `reason ${change.cancel.id}` });
          }
        }
      } finally {
        stop();
      }
    });
  });

  // On SQLite each call answers synchronously (better-sqlite3): a caller awaiting one
  // insert after another never left the microtask queue, and the process's timers (a
  // worker's heartbeat, its claims) waited for the loop to end, so its leases could run
  // out. The driver now lets the loop turn once calls have run MAX_TURN_MS within one
  // turn (src/store/sqlite/busy.ts). Found by a new user's try; on PostgreSQL every call
  // waits for the network anyway.
  describe('the event loop', () => {
    it('awaited calls one after another let a timer due meanwhile run before the loop ends', async () => {
      const { store } = await h.setup();
      let fired = false;
      setTimeout(() => (fired = true), 0);
      // Without the turns the loop runs all 20,000 inserts (seconds) before the timer.
      let inserted = 0;
      while (!fired && inserted < 20_000) {
        await store.jobInsertMany({ jobs: [newJob()], now: T0 });
        inserted++;
      }
      expect(fired, `the timer had not run after ${inserted} inserts`).toBe(true);
    });
  });

  describe('close', () => {
    const calls: Array<[string, (store: Store) => Promise<unknown>]> = [
      ['jobGet', (s) => s.jobGet({ id: 1 })],
      ['jobInsertMany', (s) => s.jobInsertMany({ jobs: [newJob()], now: T0 })],
      ['jobClaim', (s) => claim(s)],
      ['leaseAcquire', (s) => s.leaseAcquire({ name: 'n', owner: 'a', ttlMs: 1000, now: T0 })],
      ['scheduleList', (s) => s.scheduleList({})],
      ['workerList', (s) => s.workerList({ now: T0 })],
    ];

    it.each(calls)('%s after close() fails', async (_name, call) => {
      const { store } = await h.setup();
      await store.close();
      await expect(call(store)).rejects.toThrow();
    });

    it.each(calls)('%s after close() fails with StoreError naming the operation (through instrumentStore)', async (name, call) => {
      const { store } = await h.setup();
      const instrumented = instrumentStore(store, pino({ level: 'silent' }));
      await instrumented.close();
      const error = await call(instrumented).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).op).toBe(name);
    });

    it('another instance on the same database is unaffected by a close', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      const job = await insert(store);
      await store.close();
      expect(await other.jobGet({ id: job.id })).toEqual(job);
    });
  });
}
