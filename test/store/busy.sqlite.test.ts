/**
 * SQLite with another process holding the write lock (issue 9): a write waits for
 * the lock between event-loop turns instead of inside better-sqlite3's busy handler,
 * so heartbeats, cancels and signals go on meanwhile. Before the fix every write
 * blocked the event loop for up to its 5 s busy timeout.
 */
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import type { NewJob, Store } from '../../src/store/store.js';
import { spawnTs, spawnWorker } from '../helpers/child.js';
import { openBaton, tempDatabase } from '../helpers/db.js';

const job = (task: string): NewJob => ({ queue: 'default', task, payload: 'null', priority: 0, runAt: 0, maxAttempts: 3, timeoutMs: null, key: null });

/** Event-loop turns (macrotasks), not time: `setImmediate` runs only when the loop is free. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function openSqlite(path: string): Promise<Store> {
  const store = await openStore(`sqlite:${path}`);
  await store.migrate();
  return store;
}

describe('SQLite store while another connection holds the write lock', () => {
  it('a write waits without blocking the event loop, and lands once the lock is released', async () => {
    const { path } = tempDatabase();
    const store = await openSqlite(path);
    const locker = new Database(path);
    try {
      locker.exec('BEGIN EXCLUSIVE');
      let settled = false;
      const insert = store.jobInsertMany({ jobs: [job('waits')], now: 1 }).finally(() => (settled = true));
      await turns(50);
      expect(settled, 'the write settled while the lock was held (it blocked, then gave up)').toBe(false);
      // Reads go on meanwhile (WAL): the queue is still empty to them.
      expect(await store.jobList({ limit: 10 })).toEqual([]);
      locker.exec('COMMIT');
      const [inserted] = await insert;
      expect(inserted!.job.task).toBe('waits');
    } finally {
      locker.close();
      await store.close();
    }
  });
});

describe('a worker process while another process holds the write lock for 10 s', () => {
  it('hears a cancel and handles SIGTERM at once, then records the outcome after the lock is released', async () => {
    const { url, path } = tempDatabase();
    const baton = await openBaton({ database: url });
    const worker = await spawnWorker({ database: url, worker: { concurrency: 1 } });
    // Writes a checkpoint every 10 ms: under the old driver each write blocked the loop for the busy timeout.
    const running = await baton.enqueue('steps', { steps: 100_000, stepMs: 10 });
    await worker.waitForEvent('job:checkpoint', running.id);

    const locker = spawnTs(fileURLToPath(new URL('../fixtures/sqlite-write-lock.ts', import.meta.url)), [path, '10000', String(running.id)]);
    const locked = await locker.waitFor((m) => m.type === 'locked', 'the lock');
    const aborted = await worker.waitForEvent('job:aborted', running.id);
    expect(aborted.reason).toBe('cancelled');

    const signalledAt = Date.now();
    worker.kill('SIGTERM');
    const stopping = await worker.waitForEvent('worker:stopping');
    const released = await locker.waitFor((m) => m.type === 'released', 'the release', 30_000);

    // Both happened while the lock was held (the old driver froze at each write for its
    // 5 s busy timeout, so a worker writing every 10 ms heard neither until the lock was
    // released), and well within one busy timeout of their cause (measured: ~20 ms for
    // the cancel, ~50 ms for SIGTERM; the bound is loose for a loaded machine).
    expect(aborted.at as number).toBeLessThan(released.at as number);
    expect(stopping.at as number).toBeLessThan(released.at as number);
    expect((aborted.at as number) - (locked.at as number)).toBeLessThan(5000);
    expect((stopping.at as number) - signalledAt).toBeLessThan(5000);

    // After the release the outcome is written and the worker exits cleanly.
    await worker.waitForEvent('job:cancelled', running.id, 60_000);
    expect((await worker.exited).code).toBe(0);
    expect((await baton.getJob(running.id)).state).toBe('cancelled');
  });
});
