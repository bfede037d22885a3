import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { JobTablePart, JobTableStats, Store } from '../../src/store/store.js';
import { claim, newJob, T0, type Harness } from './harness.js';

/** Jobs each churn test inserts, runs to completion and deletes. */
export const CHURN = 300;

/**
 * Reads jobTableStats until `ok` holds. PostgreSQL's statistics trail the writes: a
 * backend reports its counts up to ~1 s after its transaction ends, and no event
 * says when, so this re-reads every 50 ms, up to 60 s.
 */
export async function statsUntil(store: Store, ok: (stats: JobTableStats) => boolean, part: JobTablePart = 'live', timeoutMs = 60_000): Promise<JobTableStats> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await store.jobTableStats({ part });
    if (ok(stats) || Date.now() > deadline) return stats;
    await sleep(50);
  }
}

/**
 * Vacuums `part` (jobTableVacuum) until its statistics satisfy `ok`, up to 60 s. A
 * transaction open in the same database while a VACUUM runs (another test's, running
 * beside this one) keeps it from removing the rows that died after that transaction
 * began; the worker's table vacuum passes again at its next check, and so does this.
 */
export async function vacuumUntil(store: Store, ok: (stats: JobTableStats) => boolean, part: JobTablePart = 'live'): Promise<JobTableStats> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    await store.jobTableVacuum(part === 'live' ? undefined : { part });
    const stats = await statsUntil(store, ok, part, 5_000);
    if (ok(stats) || Date.now() > deadline) return stats;
  }
}

/** Inserts CHURN jobs, claims and completes them all, deletes them: 4 × CHURN row versions die (claim, completion and delete each leave one; the insert's goes with the delete). */
export async function churn(store: Store): Promise<void> {
  await store.jobInsertMany({ jobs: Array.from({ length: CHURN }, () => newJob()), now: T0 });
  const claimed = await claim(store, { limit: CHURN });
  expect(claimed).toHaveLength(CHURN);
  await store.jobCompleteMany({ items: claimed.map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })), now: T0 + 1 });
  expect(await store.jobDeleteFinished({ states: ['completed'], limit: 10_000 })).toBe(CHURN);
}

/** The jobs table's health: statistics and the vacuum (src/maintenance/vacuum.ts). */
export function tableHealthTests(h: Harness): void {
  const mvcc = h.name === 'postgres';

  describe('jobTableStats / jobTableVacuum', () => {
    it('a new table has no dead rows; the driver says whether the database vacuums it by itself', async () => {
      const { store } = await h.setup();
      const stats = await store.jobTableStats();
      expect(stats.deadRows).toBe(0);
      expect(typeof stats.autovacuum).toBe('boolean');
      // SQLite keeps no row estimate and never needs a vacuum; PostgreSQL estimates live rows.
      if (mvcc) expect(stats.liveRows).toBe(0);
      else expect(stats).toEqual({ liveRows: null, deadRows: 0, autovacuum: true });
    });

    it('counts the row versions updates and deletes leave behind (PostgreSQL), never any on SQLite', async () => {
      const { store } = await h.setup();
      await churn(store);
      if (mvcc) expect((await statsUntil(store, (s) => s.deadRows >= CHURN)).deadRows).toBeGreaterThanOrEqual(CHURN);
      else expect((await store.jobTableStats()).deadRows).toBe(0);
    });

    it('a vacuum removes the dead rows and keeps every live job, queued or running', async () => {
      const { store } = await h.setup();
      await churn(store);
      const [queued] = await store.jobInsertMany({ jobs: [newJob({ task: 'live' })], now: T0 });
      await store.jobInsertMany({ jobs: [newJob()], now: T0 });
      const [run] = await claim(store);
      if (mvcc) await statsUntil(store, (s) => s.deadRows >= CHURN);
      const stats = await vacuumUntil(store, (s) => s.deadRows < CHURN);
      expect(stats.deadRows).toBeLessThan(CHURN);
      const left = await store.jobList({ limit: 100 });
      expect(left.map((j) => [j.id, j.state]).sort()).toEqual([[queued!.job.id, 'queued'], [run!.id, 'running']].sort());
      // Vacuuming again (nothing to do) is harmless.
      await store.jobTableVacuum();
      expect(await store.jobList({ limit: 100 })).toHaveLength(2);
    });

    it('the finished part: retention\'s deletes leave their dead rows there (PostgreSQL: its own table), and its vacuum removes them; live jobs are untouched', async () => {
      const { store } = await h.setup();
      await churn(store);
      const [queued] = await store.jobInsertMany({ jobs: [newJob({ task: 'live' })], now: T0 });
      if (!mvcc) {
        expect(await store.jobTableStats({ part: 'finished' })).toEqual({ liveRows: null, deadRows: 0, autovacuum: true });
        await store.jobTableVacuum({ part: 'finished' });
      } else {
        // The CHURN deletes die in the finished table; the live one has the claims' and moves' dead rows.
        expect((await statsUntil(store, (s) => s.deadRows >= CHURN, 'finished')).deadRows).toBeGreaterThanOrEqual(CHURN);
        expect((await vacuumUntil(store, (s) => s.deadRows < CHURN, 'finished')).deadRows).toBeLessThan(CHURN);
        // The live table was not vacuumed by it.
        expect((await store.jobTableStats({ part: 'live' })).deadRows).toBeGreaterThanOrEqual(CHURN);
      }
      expect((await store.jobList({ limit: 10 })).map((j) => j.id)).toEqual([queued!.job.id]);
    });

    it('two stores vacuuming at once both return: neither waits for the other', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      await churn(store);
      await Promise.all([store.jobTableVacuum(), other.jobTableVacuum(), store.jobTableVacuum()]);
      expect(await store.jobList({ limit: 10 })).toEqual([]);
    });
  });
}
