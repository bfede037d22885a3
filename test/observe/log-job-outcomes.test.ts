/**
 * The worker's outcome line (issue 13, item 2; issue 30, item 11): one line per job
 * outcome, fed from the worker's events, with task, id, attempt, duration and
 * outcome; a failed attempt is that one line at warn with the error's message, its
 * stack at debug only. Every worker writes them (`quiet` leaves out completed jobs).
 * Both drivers.
 */
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { defineTask, NonRetryableError } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';
import { orderTask, waitingOrder, renamedTask } from '../helpers/steps.js';

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

/** A pino logger at `level` (default info) whose lines are parsed into `lines`. */
function capture(level = 'info'): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger: Logger = pino({ level }, { write: (text: string) => void lines.push(JSON.parse(text) as Line) });
  return { logger, lines };
}

/** The outcome lines among `lines`. */
const outcomes = (lines: Line[]) => lines.filter((l) => 'outcome' in l);

describe('the worker\'s outcome lines', () => {
  it('one line per outcome at info: completed, retry scheduled and failed (warn, with the message), cancelled (with the reason), snoozed and released at shutdown; nothing else about a job', async () => {
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
    const { logger, lines } = capture();
    const worker = baton.worker({ tasks: [work], concurrency: 10, drainTimeout: 0, logger });
    await worker.start();

    // Subscribed before the enqueues: a job may end before the next enqueue returns.
    const ended = Promise.all([collectEvents(worker, 'job:completed', 1), collectEvents(worker, 'job:failed', 2), collectEvents(worker, 'job:snoozed', 1)]);
    const ok = await baton.enqueue(work, 'ok');
    const throws = await baton.enqueue(work, 'throw');
    const fatal = await baton.enqueue(work, 'fatal');
    const snooze = await baton.enqueue(work, 'snooze');
    // Every line about a job at info and above: the outcome line alone.
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
    expect(lineOf(throws.id)).toEqual([expect.objectContaining({ ...common(throws.id), level: 40, outcome: 'retry scheduled', retryAt: expect.any(String), error: 'boom', msg: expect.stringMatching(new RegExp(`^work job ${throws.id} attempt 1: retry scheduled \\(\\d+ ms\\): boom$`)) })]);
    expect(lineOf(fatal.id)).toEqual([expect.objectContaining({ ...common(fatal.id), level: 40, outcome: 'failed', error: 'no way', msg: expect.stringMatching(/: failed \(\d+ ms\): no way$/) })]);
    for (const line of lineOf(throws.id).concat(lineOf(fatal.id))) expect(line).not.toHaveProperty('err');
    expect(lineOf(snooze.id)).toEqual([expect.objectContaining({ ...common(snooze.id), outcome: 'snoozed', delayMs: 60_000 })]);
    expect(lineOf(cancelled.id)).toEqual([expect.objectContaining({ ...common(cancelled.id), outcome: 'cancelled', reason: 'not needed' })]);
    expect(lineOf(released.id)).toEqual([expect.objectContaining({ ...common(released.id), outcome: 'released' })]);
    for (const line of outcomes(lines)) {
      expect(line.durationMs).toEqual(expect.any(Number));
      expect(line.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(outcomes(lines)).toHaveLength(6);
  });

  it('times a job claimed ahead (prefetch) from its handler\'s start, not its claim; one cancelled while it waited has no duration', async () => {
    const baton = await openBaton();
    const gates = new Map<number, () => void>();
    const task = defineTask('held', { handler: (n: number) => new Promise<number>((resolve) => gates.set(n, () => resolve(n))) });
    const [a, b, c] = await baton.enqueueMany([0, 1, 2].map((n) => ({ task, payload: n })));
    // One clock for the worker and the log, moved by hand: durations are exact.
    let now = Date.now();
    const clock = { now: () => now };
    const { logger, lines } = capture();
    const worker = baton.worker({ tasks: [task], concurrency: 1, prefetch: 2, pollInterval: 60_000, clock, logger });
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

    const durationOf = (id: number) => outcomes(lines).filter((l) => l.jobId === id).map((l) => [l.outcome, l.durationMs, l.msg]);
    expect(durationOf(a!.id)).toEqual([['completed', 1000, `held job ${a!.id} attempt 1: completed (1000 ms)`]]);
    expect(durationOf(b!.id)).toEqual([['completed', 250, `held job ${b!.id} attempt 1: completed (250 ms)`]]);
    expect(durationOf(c!.id)).toEqual([['cancelled', null, `held job ${c!.id} attempt 1: cancelled`]]);
  });

  it('the stack of a failed attempt is logged at debug only, in a line of its own', async () => {
    const baton = await openBaton();
    const task = defineTask('flaky', { maxAttempts: 1, handler: async () => Promise.reject(new Error('broken\nsecond line')) });
    const { logger, lines } = capture('debug');
    const worker = baton.worker({ tasks: [task], logger });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(task, null);
    await failed;
    await worker.stop();
    const about = lines.filter((l) => l.jobId === job.id && l.level >= 20);
    const outcome = about.filter((l) => 'outcome' in l);
    expect(outcome).toEqual([expect.objectContaining({ level: 40, outcome: 'failed', error: 'broken\nsecond line', msg: expect.stringMatching(/: failed \(\d+ ms\): broken second line$/) })]);
    const stacks = about.filter((l) => 'err' in l);
    expect(stacks).toEqual([expect.objectContaining({ level: 20, msg: 'job failed', err: expect.objectContaining({ stack: expect.stringContaining('broken') }) })]);
  });

  it('quiet: no line for a completed job; a failed one still has its line', async () => {
    const baton = await openBaton();
    const task = defineTask('either', { maxAttempts: 1, handler: async (fail: boolean) => (fail ? Promise.reject(new Error('no')) : 1) });
    const { logger, lines } = capture();
    const worker = baton.worker({ tasks: [task], logger, quiet: true });
    await worker.start();
    const ended = Promise.all([collectEvents(worker, 'job:completed', 1), collectEvents(worker, 'job:failed', 1)]);
    await baton.enqueue(task, false);
    const bad = await baton.enqueue(task, true);
    await ended;
    await worker.stop();
    expect(outcomes(lines).map((l) => [l.jobId, l.outcome])).toEqual([[bad.id, 'failed']]);
  });

  it('a run suspended on a durable wait: one line at info saying what it waits for; orphaned steps are warned of once', async () => {
    const baton = await openBaton();
    const nap = defineTask('nap', { handler: async (_: null, ctx) => ctx.sleep(60_000) });
    const { logger, lines } = capture();
    const worker = baton.worker({ tasks: [orderTask, nap, renamedTask], concurrency: 3, logger });
    await worker.start();
    const order = await waitingOrder(baton, worker);
    const napping = waitForEvent(worker, 'job:waiting', (e) => e.job.task === 'nap');
    const napJob = await baton.enqueue(nap, null);
    const { wait } = await napping;
    const orphaned = waitForEvent(worker, 'job:steps-orphaned');
    await baton.enqueue(renamedTask, null);
    await orphaned;
    await until(() => outcomes(lines).some((l) => l.task === 'renamed' && l.outcome === 'completed'), 'the renamed job\'s completed line');

    const orderLine = outcomes(lines).find((l) => l.jobId === order.id)!;
    const { until: deadline } = (await baton.getJob(order.id)).wait!;
    expect(orderLine).toMatchObject({ level: 30, outcome: 'waiting', attempt: 1, wait: { kind: 'message', topic: 'shipped', until: deadline.toISOString() } });
    expect(orderLine.msg).toMatch(new RegExp(`^order job ${order.id} attempt 1: waiting \\(\\d+ ms\\): waits for a message on "shipped" until ${deadline.toISOString()}$`));
    const napLine = outcomes(lines).find((l) => l.jobId === napJob.id)!;
    expect(napLine).toMatchObject({ level: 30, outcome: 'waiting' });
    expect(napLine.msg).toMatch(new RegExp(`: waiting \\(\\d+ ms\\): sleeps until ${wait.until.toISOString()}$`));
    // The orphan: the run's one warning, no outcome line of its own.
    expect(lines.filter((l) => /never reached/.test(l.msg))).toHaveLength(1);
    expect(lines.filter((l) => l.level >= 40 && Array.isArray(l.steps))).toHaveLength(1);
  });
});
