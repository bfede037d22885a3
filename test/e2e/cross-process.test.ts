/**
 * Client and worker in different processes, on both drivers: an enqueue in one
 * process is run by a worker in another; a cancel from one process aborts the job
 * running in another; and a worker whose safety-net poll is a minute away still
 * starts another process's job promptly (LISTEN/NOTIFY on PostgreSQL, the
 * `data_version` watch on SQLite). Ordering is asserted by causality: times a
 * process took before writing (createdAt, cancelRequestedAt) against times another
 * process reported after reacting.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnWorker, type ChildMessage } from '../helpers/child.js';
import { inOtherProcess } from '../helpers/client.js';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { until } from '../helpers/events.js';
import { Ledger } from '../helpers/ledger.js';

/** The job as another process's client answered it (JSON: dates are ISO strings). */
type AnsweredJob = { id: number; state: string; createdAt: string; cancelRequestedAt: string | null };

const ledgers: Ledger[] = [];
afterEach(() => {
  for (const ledger of ledgers.splice(0)) ledger.close();
});

function setup() {
  const db = tempDatabase();
  const ledgerPath = join(db.dir, 'ledger.db');
  const ledger = new Ledger(ledgerPath);
  ledgers.push(ledger);
  return { db, ledgerPath, ledger };
}

const at = (m: ChildMessage) => m.at as number;

describe(`cross-process client and worker (${testDriver})`, () => {
  it('a job enqueued in one process is claimed after it was written and completed by a worker in another', async () => {
    const { db, ledgerPath, ledger } = setup();
    const worker = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 2 } });

    const answer = await inOtherProcess({ database: db.url, op: 'enqueue', task: 'sleepy', payload: { ms: 100 } });
    expect(answer.type, JSON.stringify(answer)).toBe('result');
    const job = answer.value as AnsweredJob;
    expect(job.state).toBe('queued');

    const claimed = await worker.waitForEvent('job:claimed', job.id);
    const completed = await worker.waitForEvent('job:completed', job.id);
    // The claim follows the write the client made (createdAt is the client's clock before the insert)…
    expect(at(claimed)).toBeGreaterThanOrEqual(new Date(job.createdAt).getTime());
    // …and the completion follows the claim, in the worker process, on attempt 1.
    expect(at(completed)).toBeGreaterThanOrEqual(at(claimed));
    expect(claimed.attempt).toBe(1);
    expect(completed.result).toEqual({ slept: 100, pid: worker.pid });
    expect(ledger.rows(job.id).map((r) => r.pid)).toEqual([worker.pid]);

    const baton = await openBaton({ database: db.url });
    const done = await baton.getJob(job.id);
    expect(done.state).toBe('completed');
    expect(done.attempt).toBe(1);
  });

  it('a cancel from one process aborts the job running in another: request stored → job:aborted (cancelled) → job:cancelled', async () => {
    const { db, ledgerPath, ledger } = setup();
    const worker = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, cancelPollInterval: 3_600_000 } });
    // Runs for an hour unless cancelled: no duration races the cancel's child process.
    const enqueued = await inOtherProcess({ database: db.url, op: 'enqueue', task: 'sleepy', payload: { ms: 3_600_000 } });
    const job = enqueued.value as AnsweredJob;
    await worker.waitForEvent('job:claimed', job.id);
    await until(() => ledger.rows(job.id).length === 1, 'the handler started in the worker process');

    const answer = await inOtherProcess({ database: db.url, op: 'cancel', id: job.id, reason: 'from another process' });
    expect(answer.type, JSON.stringify(answer)).toBe('result');
    const { outcome, job: answered } = answer.value as { outcome: string; job: AnsweredJob };
    expect(outcome).toBe('requested');
    const requestedAt = new Date(answered.cancelRequestedAt!).getTime();

    const aborted = await worker.waitForEvent('job:aborted', job.id);
    const cancelled = await worker.waitForEvent('job:cancelled', job.id);
    expect(aborted.reason).toBe('cancelled');
    // The cancel poll is an hour away: the request reached the worker through the watch / NOTIFY.
    expect(at(aborted)).toBeGreaterThanOrEqual(requestedAt);
    expect(at(cancelled)).toBeGreaterThanOrEqual(at(aborted));
    const names = worker.messages.filter((m) => m.type === 'event' && m.jobId === job.id).map((m) => m.name);
    expect(names).toEqual(['job:claimed', 'job:aborted', 'job:cancelled']);

    const baton = await openBaton({ database: db.url });
    const done = await baton.getJob(job.id);
    expect(done.state).toBe('cancelled');
    expect(done.cancelReason).toBe('from another process');
    expect(done.finishedAt!.getTime()).toBeGreaterThanOrEqual(requestedAt);
    const rows = ledger.rows(job.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.finishedAt).toBeNull(); // the handler threw its CancelledError, it did not finish the work
  });

  it(`a worker with an hour-long pollInterval starts another process's job without polling (${testDriver === 'postgres' ? 'LISTEN/NOTIFY' : 'data_version watch'})`, async () => {
    const { db, ledgerPath } = setup();
    const worker = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { pollInterval: 3_600_000 } });
    // Two rounds: a second wake-up works as well as the first.
    for (const n of [1, 2]) {
      const answer = await inOtherProcess({ database: db.url, op: 'enqueue', task: 'hash', payload: { n } });
      const job = answer.value as AnsweredJob;
      // Done long before the first poll: the change watch woke the worker (no speed claim).
      await worker.waitForEvent('job:completed', job.id);
    }
  });
});
