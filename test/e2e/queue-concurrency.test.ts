/**
 * A fleet-wide queue concurrency limit (issue 12), on both drivers: four worker
 * processes with 2 slots each (8 slots for a limit of 3: the limit binds, and no one
 * worker can hold the whole room — a worker that ends a job refills the room it freed in
 * the same transaction, issue 14, so with 5 slots one process could keep all of it)
 * serve a queue limited to 3; 200 jobs of random length
 * all complete, and the external ledger (each handler's start and end, written by the
 * handler itself) never shows more than 3 of them running at once. The ledger's
 * intervals lie inside the jobs' `running` intervals in the database, so this is a
 * lower bound on what the database allowed: it can only under-count an overlap.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnWorker, type ChildHandle } from '../helpers/child.js';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { Ledger, maxOverlap } from '../helpers/ledger.js';

const ledgers: Ledger[] = [];
afterEach(() => {
  for (const ledger of ledgers.splice(0)) ledger.close();
});

describe(`queue concurrency across processes (${testDriver})`, () => {
  it('four workers × 2 slots, queue limit 3, 200 jobs of random length: never more than 3 running at once, all complete', async () => {
    const db = tempDatabase();
    const ledgerPath = join(db.dir, 'ledger.db');
    const ledger = new Ledger(ledgerPath);
    ledgers.push(ledger);
    const baton = await openBaton({ database: db.url });
    await baton.queues.setConcurrency('limited', 3, { force: true });
    const config = { database: db.url, ledger: ledgerPath, worker: { concurrency: 2, queues: ['limited'], pollInterval: 50 } };
    const workers: ChildHandle[] = [];
    for (let i = 0; i < 4; i++) workers.push(await spawnWorker(config));

    const jobs = await baton.enqueueMany(
      Array.from({ length: 200 }, (_, n) => ({ task: 'sleepy', payload: { ms: 5 + ((n * 37) % 40), tick: 5 }, options: { queue: 'limited' } })),
    );
    await Promise.all(jobs.map((job) => Promise.race(workers.map((w) => w.waitForEvent('job:completed', job.id)))));

    const rows = ledger.rows();
    expect(new Set(rows.map((r) => r.jobId)).size).toBe(200);
    expect(rows.every((r) => r.finishedAt !== null)).toBe(true);
    const most = maxOverlap(rows);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThanOrEqual(2); // the limit, not a single slot, is what bounded it
    // More than one process took part.
    expect(new Set(rows.map((r) => r.pid)).size).toBeGreaterThan(1);
    expect((await baton.queues.list()).find((q) => q.name === 'limited')).toMatchObject({ concurrency: 3, counts: { completed: 200, running: 0 } });
  });
});
