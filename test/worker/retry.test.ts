import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTask, NonRetryableError, type Job, type WorkerEvents } from 'baton-jobs';
import { STORED_TEXT_LIMITS } from '../../src/errors.js';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

type Failed = WorkerEvents['job:failed'];

describe('retries and backoff', () => {
  it('a handler failing on attempts 1-2 completes on attempt 3, with one error entry per failed attempt and retries no earlier than the backoff', async () => {
    const baton = await openBaton();
    const seen: number[] = [];
    // A backoff long enough that the row read right after each failure (asynchronous
    // on PostgreSQL) still finds the job queued on a busy machine.
    const flaky = defineTask('flaky', {
      maxAttempts: 3,
      backoff: { type: 'fixed', delay: 1000 },
      handler: async (_: null, ctx) => {
        seen.push(ctx.job.attempt);
        if (ctx.job.attempt < 3) throw new Error(`attempt ${ctx.job.attempt} broke`);
        return { ok: ctx.job.attempt };
      },
    });
    const worker = baton.worker({ tasks: [flaky], concurrency: 1, pollInterval: 20 });
    await worker.start();

    // The row as it is right after each failure: read synchronously from the
    // job:failed listener (better-sqlite3 runs the SELECT before the listener returns).
    const between: Array<Promise<Job>> = [];
    worker.on('job:failed', (e) => between.push(baton.getJob(e.job.id)));
    const failures = collectEvents(worker, 'job:failed', 2);
    const claims = collectEvents(worker, 'job:claimed', 3);
    const completed = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(flaky, null);
    const [done, failed, claimed] = await Promise.all([completed, failures, claims]);

    expect(done.result).toEqual({ ok: 3 });
    expect(seen).toEqual([1, 2, 3]);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('completed');
    expect(final.attempt).toBe(3);
    expect(final.result).toEqual({ ok: 3 });
    expect(final.errors).toHaveLength(2);
    for (const [i, error] of final.errors.entries()) {
      expect(error.attempt).toBe(i + 1);
      expect(error.time).toBeInstanceOf(Date);
      expect(error.message).toBe(`attempt ${i + 1} broke`);
      expect(error.stack).toContain(`Error: attempt ${i + 1} broke`);
    }

    const rows = await Promise.all(between);
    for (const [i, e] of failed.entries()) {
      const failedAt = final.errors[i]!.time.getTime();
      expect(e.retryAt).toBeInstanceOf(Date);
      expect(e.retryAt!.getTime()).toBeGreaterThanOrEqual(failedAt + 1000);
      // Between attempts the job is back in `queued` with runAt = retryAt.
      expect(rows[i]!.state).toBe('queued');
      expect(rows[i]!.attempt).toBe(i + 1);
      expect(rows[i]!.runAt.getTime()).toBe(e.retryAt!.getTime());
      expect(rows[i]!.errors.at(-1)!.message).toBe(`attempt ${i + 1} broke`);
      // The next attempt was not claimed before its retry time.
      expect(claimed[i + 1]!.job.startedAt!.getTime()).toBeGreaterThanOrEqual(e.retryAt!.getTime());
    }
  });

  it('a handler that always throws ends `failed` after maxAttempts with exactly one error entry per attempt', async () => {
    const baton = await openBaton();
    let calls = 0;
    const broken = defineTask('broken', {
      maxAttempts: 3,
      backoff: { type: 'fixed', delay: 20 },
      handler: async () => {
        calls++;
        throw new Error('always broken');
      },
    });
    const worker = baton.worker({ tasks: [broken], concurrency: 2, pollInterval: 20 });
    await worker.start();
    const events: Failed[] = [];
    worker.on('job:failed', (e) => events.push(e));
    const terminal = waitForEvent(worker, 'job:failed', (e) => e.retryAt === null);
    const job = await baton.enqueue(broken, null);
    await terminal;
    // One more claim pass: nothing is left to run.
    await worker.loops.fetch();

    expect(calls).toBe(3);
    expect(events.map((e) => [e.job.attempt, e.retryAt === null])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('failed');
    expect(final.attempt).toBe(3);
    expect(final.finishedAt).toBeInstanceOf(Date);
    expect(final.result).toBeNull();
    expect(final.leaseOwner).toBeNull();
    expect(final.errors.map((e) => [e.attempt, e.message])).toEqual([
      [1, 'always broken'],
      [2, 'always broken'],
      [3, 'always broken'],
    ]);
    expect(final.errors.every((e) => typeof e.stack === 'string' && e.stack.includes('always broken'))).toBe(true);
  });

  it('NonRetryableError fails the job at once, on attempt 1 of 5', async () => {
    const baton = await openBaton();
    let calls = 0;
    const refuse = defineTask('refuse', {
      maxAttempts: 5,
      backoff: { type: 'fixed', delay: 0 },
      handler: async () => {
        calls++;
        throw new NonRetryableError('the account is closed');
      },
    });
    const worker = baton.worker({ tasks: [refuse], pollInterval: 20 });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(refuse, null);
    const event = await failed;
    await worker.loops.fetch();

    expect(event.retryAt).toBeNull();
    expect(event.error).toBeInstanceOf(NonRetryableError);
    expect(calls).toBe(1);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('failed');
    expect(final.attempt).toBe(1);
    expect(final.maxAttempts).toBe(5);
    expect(final.errors).toHaveLength(1);
    expect(final.errors[0]!.message).toBe('the account is closed');
  });

  it('a payload that the task schema rejects at run time fails at once, non-retryable, naming the field', async () => {
    // The client has no task registry, so the payload is stored unchecked (as if
    // it had been enqueued before the schema tightened).
    const baton = await openBaton();
    const job = await baton.enqueue('strict', { count: 'three', name: 'ok' }, { maxAttempts: 3 });
    let calls = 0;
    const strict = defineTask('strict', {
      schema: z.object({ count: z.number(), name: z.string() }),
      backoff: { type: 'fixed', delay: 0 },
      handler: async () => {
        calls++;
        return 'ran';
      },
    });
    const worker = baton.worker({ tasks: [strict], pollInterval: 20 });
    const failed = waitForEvent(worker, 'job:failed', (e) => e.job.id === job.id);
    await worker.start();
    const event = await failed;
    await worker.loops.fetch();

    expect(calls).toBe(0);
    expect(event.retryAt).toBeNull();
    expect(event.error).toBeInstanceOf(NonRetryableError);
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('failed');
    expect(final.attempt).toBe(1);
    expect(final.errors).toHaveLength(1);
    expect(final.errors[0]!.message).toContain('invalid payload for task "strict"');
    expect(final.errors[0]!.message).toMatch(/\bcount: /);
    expect(final.errors[0]!.message).not.toMatch(/\bname: /);
  });

  it('an error of megabytes (message and stack) and a huge progress message are stored cut to their limits, saying how much was left out', async () => {
    const baton = await openBaton();
    const huge = 'x'.repeat(3 * 1024 * 1024);
    let reported!: () => void;
    const progressed = new Promise<void>((resolve) => (reported = resolve));
    const bloat = defineTask('bloat', {
      maxAttempts: 1,
      handler: async (_payload: null, ctx) => {
        ctx.progress(1, 2, huge);
        reported();
        const error = new Error(huge);
        error.stack = `Error: ${huge}\n    at somewhere`;
        throw error;
      },
    });
    const worker = baton.worker({ tasks: [bloat], pollInterval: 20, progressInterval: 0 });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(bloat, null);
    await progressed;
    await failed;
    const final = await baton.getJob(job.id);
    expect(final.state).toBe('failed');
    const [entry] = final.errors;
    expect(entry!.message.startsWith('x'.repeat(STORED_TEXT_LIMITS.message))).toBe(true);
    expect(entry!.message).toBe(`${'x'.repeat(STORED_TEXT_LIMITS.message)}… (${huge.length - STORED_TEXT_LIMITS.message} more characters)`);
    expect(entry!.stack!.length).toBeLessThan(STORED_TEXT_LIMITS.stack + 100);
    expect(entry!.stack).toMatch(/… \(\d+ more characters\)$/);
    expect(final.progress?.message?.length).toBeLessThan(STORED_TEXT_LIMITS.progressMessage + 100);
    await worker.stop();
  });
});
