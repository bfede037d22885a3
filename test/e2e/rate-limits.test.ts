/**
 * A fleet-wide rate limit (issue 12), on both drivers: three worker processes with 5
 * slots each serve a queue limited to 10 starts per second; 100 quick jobs all
 * complete (about 10 s), and in no sliding window of 1 s do more than 10 of them start.
 * The starts are the database's (each job's `startedAt`, the claim's time): that is
 * what the limit bounds. A handler begins a little after its claim, by however long the
 * process takes to get to it, so a ledger of handler entries can show a window's edge
 * shifted by that delay; no job system can bound that, and none claims to.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnWorker, type ChildHandle } from '../helpers/child.js';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { Ledger } from '../helpers/ledger.js';

const ledgers: Ledger[] = [];
afterEach(() => {
  for (const ledger of ledgers.splice(0)) ledger.close();
});

/** The most of `times` (ms) in any window (t − periodMs, t]. */
function busiestWindow(times: number[], periodMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[first]! <= sorted[last]! - periodMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

describe(`rate limits across processes (${testDriver})`, () => {
  it('three workers × 5 slots, 10 starts per second, 100 jobs: at most 10 start in any sliding second, all complete', async () => {
    const db = tempDatabase();
    const ledgerPath = join(db.dir, 'ledger.db');
    const ledger = new Ledger(ledgerPath);
    ledgers.push(ledger);
    const baton = await openBaton({ database: db.url });
    await baton.queues.setRateLimit('metered', { limit: 10, periodMs: 1000 }, { force: true });
    // The default poll (1 s): the workers claim again when a window frees a place because
    // the store tells them when, not because they poll often.
    const config = { database: db.url, ledger: ledgerPath, worker: { concurrency: 5, queues: ['metered'] } };
    const workers: ChildHandle[] = [];
    for (let i = 0; i < 3; i++) workers.push(await spawnWorker(config));

    const jobs = await baton.enqueueMany(Array.from({ length: 100 }, () => ({ task: 'sleepy', payload: { ms: 2, tick: 2 }, options: { queue: 'metered' } })));
    await Promise.all(jobs.map((job) => Promise.race(workers.map((w) => w.waitForEvent('job:completed', job.id)))));

    const starts = await Promise.all(jobs.map(async (job) => (await baton.getJob(job.id)).startedAt!.getTime()));
    expect(busiestWindow(starts, 1000)).toBeLessThanOrEqual(10);
    expect(busiestWindow(starts, 1000)).toBeGreaterThanOrEqual(5); // the rate, not the slots, is what bounded it
    // 100 starts at 10 per second take at least 9 s from the first to the last.
    expect(Math.max(...starts) - Math.min(...starts)).toBeGreaterThanOrEqual(9000);
    expect(new Set(ledger.rows().map((r) => r.pid)).size).toBeGreaterThan(1);
    const [queue] = (await baton.queues.list()).filter((q) => q.name === 'metered');
    expect(queue).toMatchObject({ counts: { completed: 100 }, rateLimit: { limit: 10, periodMs: 1000 } });
  });
});
