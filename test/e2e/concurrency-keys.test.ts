/**
 * Per-key concurrency across processes (issue 12), on both drivers: four worker
 * processes with 5 slots each run 20 customers × 20 jobs of a task limited to one job
 * per customer; the external ledger (each handler's own start and end) never shows two
 * jobs of one customer at once, and all 400 complete. The ledger's intervals lie inside
 * the jobs' `running` intervals in the database, so an overlap it shows the database
 * allowed too.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnWorker, type ChildHandle } from '../helpers/child.js';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { Ledger, maxOverlap } from '../helpers/ledger.js';
import { createKit } from '../fixtures/kit.js';

const ledgers: Ledger[] = [];
afterEach(() => {
  for (const ledger of ledgers.splice(0)) ledger.close();
});

describe(`concurrency keys across processes (${testDriver})`, () => {
  it('four workers × 5 slots, one job per customer, 20 customers × 20 jobs: never two of one customer at once, all complete', async () => {
    const db = tempDatabase();
    const ledgerPath = join(db.dir, 'ledger.db');
    const ledger = new Ledger(ledgerPath);
    ledgers.push(ledger);
    const baton = await openBaton({ database: db.url });
    const config = { database: db.url, ledger: ledgerPath, worker: { concurrency: 5, pollInterval: 50 } };
    const workers: ChildHandle[] = [];
    for (let i = 0; i < 4; i++) workers.push(await spawnWorker(config));

    // Enqueued with the task itself: its concurrency option gives each job its key and limit.
    const { perCustomer } = createKit();
    const jobs = await baton.enqueueMany(
      Array.from({ length: 400 }, (_, n) => ({ task: perCustomer, payload: { customer: `c${n % 20}`, ms: 2 + ((n * 37) % 15), tick: 2 } })),
    );
    expect(new Set(jobs.map((j) => j.concurrencyKey)).size).toBe(20);
    expect(jobs.every((j) => j.concurrencyLimit === 1)).toBe(true);
    await Promise.all(jobs.map((job) => Promise.race(workers.map((w) => w.waitForEvent('job:completed', job.id)))));

    const customerOf = new Map(jobs.map((j) => [j.id, j.concurrencyKey!]));
    const rows = ledger.rows();
    expect(new Set(rows.map((r) => r.jobId)).size).toBe(400);
    expect(rows.every((r) => r.finishedAt !== null)).toBe(true);
    for (let c = 0; c < 20; c++) {
      expect(maxOverlap(rows.filter((r) => customerOf.get(r.jobId) === `c${c}`)), `customer c${c}`).toBe(1);
    }
    expect(maxOverlap(rows)).toBeGreaterThan(1); // customers ran side by side
    expect(new Set(rows.map((r) => r.pid)).size).toBeGreaterThan(1);
    expect(await baton.queues.keys('default')).toEqual([]); // no live job of any key left
  });
});
