/**
 * The worker's outcome line (issue 13, item 2): one info line per job outcome, fed
 * from the worker's events, with task, id, attempt, duration and outcome. Both drivers.
 */
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { defineTask, NonRetryableError } from 'baton-jobs';
import { logJobOutcomes } from '../../src/observe/log-job-outcomes.js';
import { openBaton } from '../helpers/db.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';

interface Line {
  level: number;
  msg: string;
  outcome: string;
  task: string;
  jobId: number;
  attempt: number;
  durationMs: number | null;
  [key: string]: unknown;
}

/** A pino logger at info whose lines are parsed into `lines`. */
function capture(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger: Logger = pino({ level: 'info' }, { write: (text: string) => void lines.push(JSON.parse(text) as Line) });
  return { logger, lines };
}

describe('logJobOutcomes', () => {
  it('logs one line per outcome: completed, retry scheduled, failed, cancelled (with the reason), snoozed and released at shutdown', async () => {
    const baton = await openBaton();
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const work = defineTask('work', {
      maxAttempts: 2,
      backoff: { type: 'fixed', delay: 60_000 },
      handler: async (mode: 'ok' | 'throw' | 'fatal' | 'wait' | 'snooze', ctx) => {
        if (mode === 'throw') throw new Error('boom');
        if (mode === 'fatal') throw new NonRetryableError('no way');
        if (mode === 'snooze') ctx.snooze(60_000);
        if (mode === 'wait') {
          // Cancel and shutdown abort the signal; the gate keeps the job running until then.
          await Promise.race([gate, new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error)))]);
        }
        return mode;
      },
    });
    const worker = baton.worker({ tasks: [work], concurrency: 10, drainTimeout: 0 });
    const { logger, lines } = capture();
    logJobOutcomes(worker, logger);
    await worker.start();

    // Subscribed before the enqueues: a job may end before the next enqueue returns.
    const ended = Promise.all([collectEvents(worker, 'job:completed', 1), collectEvents(worker, 'job:failed', 2), collectEvents(worker, 'job:snoozed', 1)]);
    const ok = await baton.enqueue(work, 'ok');
    const throws = await baton.enqueue(work, 'throw');
    const fatal = await baton.enqueue(work, 'fatal');
    const snooze = await baton.enqueue(work, 'snooze');
    const lineOf = (id: number) => lines.filter((l) => l.jobId === id);
    await ended;

    const claimed = waitForEvent(worker, 'job:claimed');
    const cancelled = await baton.enqueue(work, 'wait');
    await claimed;
    const cancelledEvent = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === cancelled.id);
    await baton.cancel(cancelled.id, 'not needed');
    await cancelledEvent;

    const claimedAgain = waitForEvent(worker, 'job:claimed');
    const released = await baton.enqueue(work, 'wait');
    await claimedAgain;
    await worker.stop();
    openGate();

    const common = (id: number) => ({ level: 30, task: 'work', jobId: id, attempt: 1 });
    expect(lineOf(ok.id)).toEqual([expect.objectContaining({ ...common(ok.id), outcome: 'completed', msg: expect.stringMatching(new RegExp(`^work job ${ok.id} attempt 1: completed \\(\\d+ ms\\)$`)) })]);
    expect(lineOf(throws.id)).toEqual([expect.objectContaining({ ...common(throws.id), outcome: 'retry scheduled', retryAt: expect.any(String) })]);
    expect(lineOf(fatal.id)).toEqual([expect.objectContaining({ ...common(fatal.id), outcome: 'failed' })]);
    expect(lineOf(snooze.id)).toEqual([expect.objectContaining({ ...common(snooze.id), outcome: 'snoozed', delayMs: 60_000 })]);
    expect(lineOf(cancelled.id)).toEqual([expect.objectContaining({ ...common(cancelled.id), outcome: 'cancelled', reason: 'not needed' })]);
    expect(lineOf(released.id)).toEqual([expect.objectContaining({ ...common(released.id), outcome: 'released' })]);
    for (const line of lines) {
      expect(line.durationMs).toEqual(expect.any(Number));
      expect(line.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(lines).toHaveLength(6);
  });

  it('times a job claimed ahead (prefetch) from its handler\'s start, not its claim; one cancelled while it waited has no duration', async () => {
    const baton = await openBaton();
    const gates = new Map<number, () => void>();
    const task = defineTask('held', { handler: (n: number) => new Promise<number>((resolve) => gates.set(n, () => resolve(n))) });
    const [a, b, c] = await baton.enqueueMany([0, 1, 2].map((n) => ({ task, payload: n })));
    // One clock for the worker and the log, moved by hand: durations are exact.
    let now = Date.now();
    const clock = { now: () => now };
    const worker = baton.worker({ tasks: [task], concurrency: 1, prefetch: 2, pollInterval: 60_000, clock });
    const { logger, lines } = capture();
    logJobOutcomes(worker, logger, clock.now);
    const claimed = collectEvents(worker, 'job:claimed', 3);
    await worker.start();
    await claimed;
    await until(() => gates.has(0), 'the first handler to start');
    const cancelled = waitForEvent(worker, 'job:cancelled');
    await baton.cancel(c!.id);
    await cancelled;

    now += 1000; // b waits this long for the slot
    const aCompleted = waitForEvent(worker, 'job:completed', (e) => e.job.id === a!.id);
    gates.get(0)!();
    await aCompleted;
    await until(() => gates.has(1), 'the job claimed ahead to start');
    now += 250;
    const bCompleted = waitForEvent(worker, 'job:completed', (e) => e.job.id === b!.id);
    gates.get(1)!();
    expect((await bCompleted).durationMs).toBe(250);
    await worker.stop();

    const durationOf = (id: number) => lines.filter((l) => l.jobId === id).map((l) => [l.outcome, l.durationMs, l.msg]);
    expect(durationOf(a!.id)).toEqual([['completed', 1000, `held job ${a!.id} attempt 1: completed (1000 ms)`]]);
    expect(durationOf(b!.id)).toEqual([['completed', 250, `held job ${b!.id} attempt 1: completed (250 ms)`]]);
    expect(durationOf(c!.id)).toEqual([['cancelled', null, `held job ${c!.id} attempt 1: cancelled`]]);
  });

  it('stops logging when its returned function is called', async () => {
    const baton = await openBaton();
    const task = defineTask('quick', { handler: async () => 1 });
    const worker = baton.worker({ tasks: [task] });
    const { logger, lines } = capture();
    const off = logJobOutcomes(worker, logger);
    await worker.start();
    let completed = waitForEvent(worker, 'job:completed');
    const first = await baton.enqueue(task, null);
    await completed;
    off();
    completed = waitForEvent(worker, 'job:completed');
    await baton.enqueue(task, null);
    await completed;
    expect(lines.map((l) => l.jobId)).toEqual([first.id]);
  });
});
