/**
 * A job's whole story (issue 13), read from stored data after real processes acted on
 * it, on both drivers: a SIGTERM hand-off between two worker processes, a SIGKILLed
 * worker whose job is rescued by another, a cancel from the CLI naming who asked (read
 * back through `baton job --json` and its text), and a retry scheduled then a snooze in
 * one worker. The events are asserted in order, with their attempt and worker.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, type TimelineEntry } from 'baton-jobs';
import { spawnWorker, type ChildHandle } from '../helpers/child.js';
import { runCli } from '../helpers/cli.js';
import { openBaton, testDriver } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';

/** The worker id a worker process reported when ready. */
const workerId = (w: ChildHandle) => w.messages.find((m) => m.type === 'ready')!.workerId as string;

/** The story as [type, attempt, worker] rows. */
const rows = (timeline: TimelineEntry[]) => timeline.map((e) => [e.type, e.attempt, e.worker]);

/** Entries are in time order (each at or after the one before). */
function expectOrdered(timeline: TimelineEntry[]): void {
  for (let i = 1; i < timeline.length; i++) expect(timeline[i]!.at.getTime(), timeline[i]!.summary).toBeGreaterThanOrEqual(timeline[i - 1]!.at.getTime());
}

describe(`the stored timeline across processes (${testDriver})`, () => {
  it('a SIGTERM hand-off: attempt 1 started on A, released at shutdown (not counted), attempt 1 started on B, completed on B', async () => {
    const { db, baton, kit, ledgerPath } = await openKitBaton();
    const a = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, drainTimeout: 300, abortGrace: 2000 } });
    // 8 s of steps: the drain (300 ms) ends long before the job could.
    const job = await baton.enqueue(kit.steps, { steps: 32, stepMs: 250 });
    await a.waitForEvent('job:claimed', job.id);
    await a.waitForEvent('job:checkpoint', job.id);
    a.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(a.messages.some((m) => m.type === 'event' && m.name === 'job:released' && m.jobId === job.id)).toBe(true);
    const b = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1 } });
    await b.waitForEvent('job:completed', job.id);

    const { timeline } = await baton.getJobTimeline(job.id);
    expect(rows(timeline)).toEqual([
      ['enqueued', null, null],
      ['started', 1, workerId(a)],
      ['released', 1, workerId(a)],
      ['started', 1, workerId(b)],
      ['completed', 1, workerId(b)],
    ]);
    expectOrdered(timeline);
    const released = timeline[2] as Extract<TimelineEntry, { type: 'released' }>;
    expect(released.runAt.getTime()).toBe(job.runAt.getTime()); // due at once, its runAt (its place in line) kept
    expect(timeline[3]!.at.getTime()).toBeGreaterThanOrEqual(released.at.getTime());
  });

  it('a SIGKILL rescue: attempt 1 started on A, its lease expired and B rescued it (counted), attempt 2 started on B, completed', async () => {
    const { db, baton, kit, ledgerPath } = await openKitBaton();
    // As test/worker/crash.test.ts: a 4 s lease survives a busy machine's stalls while A lives.
    const options = { concurrency: 1, leaseTtl: 4000, heartbeatInterval: 300, rescueInterval: 200, pollInterval: 200 };
    const a = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: options });
    const job = await baton.enqueue(kit.hang, { untilAttempt: 1, thenMs: 100 }, { maxAttempts: 3 });
    await a.waitForEvent('job:claimed', job.id);
    const b = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: options });
    a.kill('SIGKILL');
    expect(await a.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await b.waitForEvent('job:completed', job.id);

    const { timeline } = await baton.getJobTimeline(job.id);
    expect(rows(timeline)).toEqual([
      ['enqueued', null, null],
      ['started', 1, workerId(a)],
      ['rescued', 1, workerId(a)],
      ['started', 2, workerId(b)],
      ['completed', 2, workerId(b)],
    ]);
    expect(timeline[2]).toMatchObject({ type: 'rescued', outcome: 'queued' });
    expectOrdered(timeline);
  });

  it('a cancel from the CLI: the request names "cli" and its reason, on attempt 1 of worker A; `baton job` prints the story', async () => {
    const { db, baton, kit, ledgerPath } = await openKitBaton();
    const a = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1 } });
    const job = await baton.enqueue(kit.sleepy, { ms: 3_600_000 });
    await a.waitForEvent('job:claimed', job.id);
    const cancel = await runCli(['cancel', String(job.id), '--reason', 'not needed', '--database', db.url]);
    expect(cancel.code, cancel.stderr).toBe(0);
    await a.waitForEvent('job:cancelled', job.id);

    const { timeline } = await baton.getJobTimeline(job.id);
    expect(rows(timeline)).toEqual([
      ['enqueued', null, null],
      ['started', 1, workerId(a)],
      ['cancelRequested', 1, workerId(a)],
      ['cancelled', 1, workerId(a)],
    ]);
    expect(timeline[2]).toMatchObject({ by: 'cli', reason: 'not needed', summary: 'cancel requested by cli: not needed' });
    expect(timeline[3]).toMatchObject({ reason: 'not needed' });
    expectOrdered(timeline);

    const json = await runCli(['job', String(job.id), '--json', '--database', db.url]);
    expect(json.code, json.stderr).toBe(0);
    const printed = JSON.parse(json.stdout) as { state: string; timeline: Array<{ type: string; at: string; by?: string }> };
    expect(printed.state).toBe('cancelled');
    expect(printed.timeline.map((e) => e.type)).toEqual(['enqueued', 'started', 'cancelRequested', 'cancelled']);
    expect(printed.timeline[2]).toMatchObject({ by: 'cli', at: timeline[2]!.at.toISOString() });
    const text = await runCli(['job', String(job.id), '--database', db.url]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    const at = lines.indexOf('timeline:');
    expect(at).toBeGreaterThan(0);
    expect(lines.slice(at + 1, at + 5)).toEqual(timeline.map((e) => `  ${e.at.toISOString()}  ${e.summary}`));
  });

  it('a retry scheduled and a snooze: attempt 1 failed with its error and retry time, attempt 2 snoozed (not counted), then completed', async () => {
    const baton = await openBaton();
    let snoozed = false;
    const flaky = defineTask('flaky', {
      maxAttempts: 3,
      backoff: { type: 'fixed', delay: 20 },
      handler: async (_payload: null, ctx) => {
        if (ctx.job.attempt === 1) throw new Error('first try fails');
        if (!snoozed) {
          snoozed = true;
          ctx.snooze(30);
        }
        return 'done';
      },
    });
    const worker = baton.worker({ tasks: [flaky], concurrency: 1, pollInterval: 20 });
    await worker.start();
    const job = await baton.enqueue(flaky, null);
    await waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);

    const { timeline } = await baton.getJobTimeline(job.id);
    expect(rows(timeline)).toEqual([
      ['enqueued', null, null],
      ['started', 1, worker.id],
      ['retryScheduled', 1, worker.id],
      ['started', 2, worker.id],
      ['snoozed', 2, worker.id],
      ['started', 2, worker.id],
      ['completed', 2, worker.id],
    ]);
    const retry = timeline[2] as Extract<TimelineEntry, { type: 'retryScheduled' }>;
    expect(retry.error).toBe('first try fails');
    expect(retry.runAt.getTime() - retry.at.getTime()).toBe(20);
    expect(timeline[4]).toMatchObject({ type: 'snoozed', delayMs: 30, rateLimited: false });
    expectOrdered(timeline);
  });
});
