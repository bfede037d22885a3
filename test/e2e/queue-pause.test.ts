/**
 * Pausing a queue fleet-wide, on both drivers: a pause made by one process stops
 * the claims of two worker processes before their next job starts, holds across
 * a worker restart, and a resume from a third process wakes the workers at once
 * (their safety-net poll is an hour away: PostgreSQL's NOTIFY or SQLite's change
 * watch woke them). "Before the next job starts" is asserted by claim order: the
 * paused queue's jobs outrank (priority -10) the jobs of the other queue, which the
 * workers do claim, so each of those claims skipped the paused queue.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnWorker, type ChildHandle } from '../helpers/child.js';
import { inOtherProcess } from '../helpers/client.js';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { Ledger } from '../helpers/ledger.js';

const ledgers: Ledger[] = [];
afterEach(() => {
  for (const ledger of ledgers.splice(0)) ledger.close();
});

/** Resolves when any of `workers` reports `name` for the job. */
const byAny = (workers: ChildHandle[], name: string, jobId: number) => Promise.race(workers.map((w) => w.waitForEvent(name, jobId)));

/** Whether any of `workers` reported a claim of one of `ids`. */
const claimedAny = (workers: ChildHandle[], ids: number[]) => workers.some((w) => w.messages.some((m) => m.name === 'job:claimed' && ids.includes(m.jobId!)));

describe(`pausing a queue across processes (${testDriver})`, () => {
  it('a pause from one process stops claims in two worker processes before their next job, survives a worker restart, and a resume wakes them at once', async () => {
    const db = tempDatabase();
    const ledgerPath = join(db.dir, 'ledger.db');
    ledgers.push(new Ledger(ledgerPath));
    const gate = join(db.dir, 'gate');
    const config = { database: db.url, ledger: ledgerPath, worker: { concurrency: 1, queues: ['q', 'other'], pollInterval: 3_600_000 } };
    const w1 = await spawnWorker(config);
    const w2 = await spawnWorker(config);
    const baton = await openBaton({ database: db.url });

    // Each worker holds one gated job of q.
    const gated = await Promise.all([1, 2].map(() => baton.enqueue('gated', { path: gate }, { queue: 'q' })));
    await Promise.all(gated.map((job) => byAny([w1, w2], 'job:claimed', job.id)));

    const paused = await inOtherProcess({ database: db.url, op: 'pause', queue: 'q' });
    expect(paused, JSON.stringify(paused)).toMatchObject({ type: 'result', value: { queue: 'q', paused: true, changed: true } });

    const held = await Promise.all([1, 2].map((n) => baton.enqueue('hash', { held: n }, { queue: 'q', priority: -10 })));
    const others = await Promise.all([1, 2].map((n) => baton.enqueue('hash', { other: n }, { queue: 'other' })));
    writeFileSync(gate, '');
    // The gated jobs finish; each worker's next claims take the other queue's jobs, never q's.
    await Promise.all([...gated, ...others].map((job) => byAny([w1, w2], 'job:completed', job.id)));
    expect(claimedAny([w1, w2], held.map((j) => j.id))).toBe(false);

    // A restarted worker still finds q paused: its first claims skip it.
    w1.kill('SIGTERM');
    expect((await w1.exited).code).toBe(0);
    const w3 = await spawnWorker(config);
    const after = await baton.enqueue('hash', { other: 3 }, { queue: 'other' });
    await byAny([w2, w3], 'job:completed', after.id);
    expect(claimedAny([w2, w3], held.map((j) => j.id))).toBe(false);
    for (const job of held) expect((await baton.getJob(job.id)).state).toBe('queued');
    expect((await baton.queues.list()).find((q) => q.name === 'q')).toMatchObject({ paused: true, counts: { queued: 2, completed: 2 } });

    const resumed = await inOtherProcess({ database: db.url, op: 'resume', queue: 'q' });
    expect(resumed, JSON.stringify(resumed)).toMatchObject({ type: 'result', value: { queue: 'q', paused: false, changed: true } });
    // Long before any poll: the resume itself woke the workers (no speed claim).
    await Promise.all(held.map((job) => byAny([w2, w3], 'job:completed', job.id)));
    expect((await baton.queues.list()).find((q) => q.name === 'q')).toMatchObject({ paused: false, pausedAt: null, counts: { queued: 0, completed: 4 } });
  });
});
