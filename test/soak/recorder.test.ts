/**
 * The recorder and the checker on a real Baton (one in-process worker on the driver under
 * test): handlers wrapped by `recorded` — short jobs, steps around a durable sleep, a
 * receive, a parent with two children, a job cancelled while running and one cancelled
 * while queued — leave a ledger that the checker passes, counting each continuation after
 * a wait, the message and the children. The chain ledger → checker holds on Baton's own
 * runs, not only on synthetic histories.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, type EnqueueOptions } from 'baton-jobs';
import { allFullJobs } from '../helpers/client.js';
import { openBaton, tempDir } from '../helpers/db.js';
import { until, waitForEvent } from '../helpers/events.js';
import { checkSoak, formatReport } from './check-soak.js';
import { LedgerWriter, readLedger } from './ledger.js';
import { recorded } from './recorder.js';

describe('recorded handlers on a real Baton', () => {
  it('leave a ledger the checker passes, with continuations, a message and children counted', async () => {
    const dir = tempDir();
    const ledger = new LedgerWriter(dir, 'worker');
    const client = new LedgerWriter(dir, 'client');
    const short = defineTask('short', { handler: recorded(ledger, 'w1', async (n: number, run) => run.result({ n })) });
    const stepped = defineTask('stepped', {
      handler: recorded(ledger, 'w1', async (_: null, run) => {
        const a = await run.step('a', () => 1);
        await run.checkpoint({ a });
        run.progress(1, 2);
        await run.ctx.sleep(200); // longer than a live wait: the run suspends and a new run replays `a`
        const b = await run.step('b', () => 2);
        return run.result({ sum: a + b });
      }),
    });
    const receiver = defineTask('receiver', { handler: recorded(ledger, 'w1', async (_: null, run) => run.result({ got: (await run.receive('go')).messageId })) });
    const parent = defineTask('parent', {
      handler: recorded(ledger, 'w1', async (_: null, run) => {
        await run.enqueueChild('short', 1);
        await run.enqueueChild('short', 2);
        await run.ctx.waitForChildren();
        return run.result();
      }),
    });
    const hang = defineTask('hang', {
      handler: recorded(ledger, 'w1', (_: null, run) => new Promise((_resolve, reject) => run.ctx.signal.addEventListener('abort', () => reject(run.ctx.signal.reason)))),
    });

    const baton = await openBaton();
    const worker = baton.worker({ tasks: [short, stepped, receiver, parent, hang], concurrency: 4 });
    const hanging = waitForEvent(worker, 'job:started', (e) => e.job.task === 'hang');
    await worker.start();
    /** Enqueues by task name, recording it as the soak's producer does. */
    const enqueue = async (task: string, payload: unknown, options: EnqueueOptions = {}) => {
      const job = await baton.enqueue(task, payload, options);
      client.record({ kind: 'job-enqueued', jobId: job.id, task: job.task, queue: job.queue, key: job.key });
      return job;
    };
    for (const n of [1, 2, 3]) await enqueue('short', n);
    await enqueue('stepped', null);
    await enqueue('stepped', null);
    const waiter = await enqueue('receiver', null);
    await enqueue('parent', null);
    const running = await enqueue('hang', null);
    const later = await enqueue('short', 4, { delay: 3_600_000 });

    client.record({ kind: 'message-sent', jobId: waiter.id, topic: 'go', messageId: 'm1' });
    await baton.send(waiter.id, 'go', { messageId: 'm1' });
    await hanging;
    for (const job of [running, later]) {
      const answer = await baton.cancel(job.id);
      client.record({ kind: 'cancel-requested', jobId: job.id, outcome: answer.outcome, stateSeen: answer.job.state, startedAt: answer.job.startedAt?.getTime() ?? null });
    }

    await until(async () => (await allFullJobs(baton)).every((j) => ['completed', 'failed', 'cancelled'].includes(j.state)), 'every job ended');
    await worker.stop();
    ledger.close();
    client.close();

    const report = checkSoak({ entries: readLedger(dir), jobs: await allFullJobs(baton) });
    expect(report.violations, formatReport(report)).toEqual([]);
    expect(report.counts.byState).toEqual({ completed: 9, cancelled: 2 }); // 3 short, 2 stepped, the receiver, the parent and its 2 children; hang and the delayed one
    expect(report.reRuns.continuations).toBeGreaterThanOrEqual(3); // each stepped job after its sleep, the parent after its children
    expect(report.reRuns.explained).toEqual({ sigkill: 0, sigterm: 0, sigstop: 0, 'net-cut': 0, 'db-restart': 0, 'cpu-hog': 0 });
    expect(report.counts).toMatchObject({ messagesSent: 1, messagesReceived: 1, children: 2, cancels: 2 });
    const steps = readLedger(dir).filter((e) => e.kind === 'step-start');
    expect(steps).toHaveLength(4); // a and b of each stepped job, each run once: replays return the stored result
  });
});
