/**
 * C23 (nothing a handler, a listener or the database does may crash the worker)
 * and C05 (shutdown hygiene: no store call and no timer after stop; interval
 * options validated).
 */
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { pino, type Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, createBaton, defineTask, sleep, type WorkerOptions } from 'baton-jobs';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { createKit } from '../fixtures/kit.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { spawnTs } from '../helpers/child.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';

/** A logger at debug level (so every log call really serializes its fields) that keeps its lines. */
function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

/** Counts process-wide unhandled rejections and uncaught exceptions during each test. */
const crashes = { unhandledRejection: [] as unknown[], uncaughtException: [] as unknown[] };
const onRejection = (reason: unknown) => void crashes.unhandledRejection.push(reason);
const onException = (error: unknown) => void crashes.uncaughtException.push(error);
beforeEach(() => {
  crashes.unhandledRejection = [];
  crashes.uncaughtException = [];
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
});
afterEach(() => {
  process.off('unhandledRejection', onRejection);
  process.off('uncaughtException', onException);
});
/** Lets pending microtasks and one macrotask turn run, so a stray rejection would be reported. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const control = defineTask('control', { handler: async (n: number) => n + 1 });

describe('C23 handlers that throw odd things', () => {
  it('C23b: undefined, null, a string, a rejected plain object, an Error with a throwing message getter, a synchronous throw and a hang each end with a readable lastError; the worker keeps going', async () => {
    const { logger, lines } = capturingLogger();
    const baton = await openBaton({ logger });
    const kit = createKit();
    const odd = kit.boom;
    // Not async: throws before any promise exists.
    const syncThrow = defineTask('syncThrow', {
      maxAttempts: 1,
      handler: (): Promise<string> => {
        throw new TypeError('thrown synchronously');
      },
    });
    const hang = defineTask('hang', { maxAttempts: 1, timeout: 200, handler: () => new Promise<never>(() => undefined) });
    // A retrying one: ends in retry-wait (queued, runAt in the future) with the error recorded.
    const oddRetry = defineTask('oddRetry', { maxAttempts: 3, backoff: { type: 'fixed', delay: 60_000 }, handler: async () => Promise.reject(undefined) });

    const worker = baton.worker({ tasks: [odd, syncThrow, hang, oddRetry, control], concurrency: 1, pollInterval: 50, abortGrace: 200 });
    await worker.start();

    const cases: Array<{ task: typeof odd | typeof syncThrow | typeof hang | typeof oddRetry; payload: unknown; message: string; state: string }> = [
      { task: odd, payload: { kind: 'undefined' }, message: 'non-Error thrown: undefined', state: 'failed' },
      { task: odd, payload: { kind: 'null' }, message: 'non-Error thrown: null', state: 'failed' },
      { task: odd, payload: { kind: 'string' }, message: 'non-Error thrown: "text"', state: 'failed' },
      { task: odd, payload: { kind: 'object' }, message: 'non-Error thrown: {"code":1}', state: 'failed' },
      { task: odd, payload: { kind: 'getter' }, message: 'Error thrown; its message could not be read', state: 'failed' },
      { task: syncThrow, payload: null, message: 'thrown synchronously', state: 'failed' },
      { task: hang, payload: null, message: 'job timed out after 200 ms', state: 'failed' },
      { task: oddRetry, payload: null, message: 'non-Error thrown: undefined', state: 'queued' },
    ];
    for (const [i, c] of cases.entries()) {
      const failed = waitForEvent(worker, 'job:failed', (e) => e.job.task === c.task.name);
      const job = await baton.enqueue(c.task as typeof odd, c.payload as { kind: string }, c.task === odd ? { maxAttempts: 1 } : {});
      const event = await failed;
      expect(event.message, c.message).toBe(c.message);
      const stored = await baton.getJob(job.id);
      expect(stored.state, c.message).toBe(c.state);
      expect(stored.attempt).toBe(1);
      expect(stored.errors).toHaveLength(1);
      expect(stored.errors[0]!.message).toBe(c.message);
      if (c.state === 'queued') expect(stored.runAt.getTime()).toBeGreaterThan(Date.now() + 30_000);

      // A control job after each case completes on the same (concurrency 1) worker.
      const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'control');
      await baton.enqueue(control, i);
      expect((await done).result).toBe(i + 1);
    }
    await settle();
    expect(crashes.unhandledRejection).toEqual([]);
    expect(crashes.uncaughtException).toEqual([]);
    // The failures were logged (with their fields serialized) without the logger throwing.
    // The stack at debug, the outcome line (one, at warn, with the message) beside it.
    expect(lines.filter((l) => l.msg === 'job failed' && l.level === 20).length).toBeGreaterThanOrEqual(7);
    expect(lines.filter((l) => l.outcome === 'failed' && l.level === 40 && typeof l.error === 'string').length).toBeGreaterThanOrEqual(7);
    expect(lines.some((l) => l.msg === 'could not record the outcome; the job will be rescued when its lease expires')).toBe(false);
  });

  it('C23: a worker event listener that throws is logged; later listeners and events still run and the worker keeps working', async () => {
    const { logger, lines } = capturingLogger();
    const baton = await openBaton({ logger });
    const worker = baton.worker({ tasks: [control], concurrency: 2 });
    worker.on('job:claimed', () => {
      throw new Error('listener exploded');
    });
    worker.on('job:completed', () => {
      throw new Error('listener exploded again');
    });
    const seen: number[] = [];
    worker.on('job:completed', (e) => seen.push(e.result as number));
    await worker.start();
    const done = collectEvents(worker, 'job:completed', 3);
    await baton.enqueueMany([1, 2, 3].map((n) => ({ task: control, payload: n })));
    await done;
    const later = waitForEvent(worker, 'job:completed');
    await baton.enqueue(control, 10);
    expect((await later).result).toBe(11);
    await settle();

    expect(seen.sort((a, b) => a - b)).toEqual([2, 3, 4, 11]);
    const thrown = lines.filter((l) => l.msg === 'event listener threw');
    expect(thrown.filter((l) => l.event === 'job:claimed')).toHaveLength(4);
    expect(thrown.filter((l) => l.event === 'job:completed')).toHaveLength(4);
    expect(crashes.unhandledRejection).toEqual([]);
    expect(crashes.uncaughtException).toEqual([]);
  });

  it('C23a (SQLite): an exclusive lock held past the busy timeout surfaces worker:error events, crashes nothing, and work resumes after the lock is released', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url, store: new SqliteStore(db.path, { busyTimeoutMs: 200 }) });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const waits = defineTask('waits', { handler: async () => (await gate, 'done') });
    const worker = baton.worker({ tasks: [waits, control], concurrency: 2, pollInterval: 50, leaseTtl: 10_000, heartbeatInterval: 100 });
    await worker.start();
    const claimed = waitForEvent(worker, 'job:claimed');
    const running = await baton.enqueue(waits, null);
    await claimed;

    const errors: Array<{ loop: string; error: unknown }> = [];
    worker.on('worker:error', (e) => errors.push(e));
    const locker = new Database(db.path);
    locker.exec('BEGIN EXCLUSIVE');
    try {
      // Held until both the claim loop and the heartbeat have failed at least twice.
      await until(
        () => errors.filter((e) => e.loop === 'fetch').length >= 2 && errors.filter((e) => e.loop === 'heartbeat').length >= 2,
        'fetch and heartbeat errors while the database is locked',
      );
    } finally {
      locker.exec('COMMIT');
      locker.close();
    }
    expect(errors.every((e) => e.error instanceof Error && /database is locked|busy/i.test((e.error as Error).message))).toBe(true);

    // After the release: the running job completes and a new job is processed.
    const finished = waitForEvent(worker, 'job:completed', (e) => e.job.id === running.id);
    release();
    expect((await finished).result).toBe('done');
    const after = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'control');
    await baton.enqueue(control, 41);
    expect((await after).result).toBe(42);
    await settle();
    expect(crashes.unhandledRejection).toEqual([]);
    expect(crashes.uncaughtException).toEqual([]);
  });
});

describe('C05 shutdown hygiene', () => {
  it('C05a: stop() with a deaf job and drain+grace = 2 s resolves after that without waiting for the handler, releases the job, and then the instance makes zero store calls, even when the abandoned handler settles', async () => {
    const db = tempDatabase();
    const calls: Array<{ op: string; error?: unknown }> = [];
    const baton = await createBaton({ database: db.url, logger: pino({ level: 'silent' }) }, (op, _ms, error) => calls.push({ op, error }));
    try {
      let settleHandler!: () => void;
      let handlerReturned = false;
      const handlerGate = new Promise<void>((resolve) => (settleHandler = resolve));
      let handlerSettled!: () => void;
      const handlerDone = new Promise<void>((resolve) => (handlerSettled = resolve));
      const deaf = defineTask('deaf', {
        handler: async (_: null, ctx) => {
          // Deaf: ignores its signal and returns only when the test opens the gate,
          // after stop() resolved (a stop that waited for it would never resolve).
          await handlerGate;
          ctx.progress(99, 100, 'late progress');
          await ctx.saveCheckpoint({ late: true }).catch(() => undefined);
          handlerReturned = true;
          handlerSettled();
          return 'late';
        },
      });
      const worker = baton.worker({
        tasks: [deaf],
        concurrency: 1,
        pollInterval: 20,
        heartbeatInterval: 20,
        cancelPollInterval: 20,
        rescueInterval: 20,
        watchInterval: 10,
        progressInterval: 0,
        drainTimeout: 1000,
        abortGrace: 1000,
      });
      await worker.start();
      const claimed = waitForEvent(worker, 'job:claimed');
      const job = await baton.enqueue(deaf, null);
      await claimed;

      const started = performance.now();
      const summary = await worker.stop();
      const took = performance.now() - started;
      const mark = calls.length;
      // Not before drain + grace (timers never fire early); not after the handler.
      expect(took).toBeGreaterThanOrEqual(1950);
      expect(handlerReturned).toBe(false);
      expect(summary).toEqual({ finished: 0, released: 1, abandoned: 1, unreleased: [] });
      const released = await baton.getJob(job.id);
      expect(released.state).toBe('queued');
      expect(released.attempt).toBe(0);
      expect(released.leaseOwner).toBeNull();
      const afterRead = calls.length;

      // Now the abandoned handler settles (progress, checkpoint, result): no store call.
      settleHandler();
      await handlerDone;
      // An observation window of many loop periods (every interval was 10-20 ms).
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(calls.slice(mark, afterRead).map((c) => c.op)).toEqual(['jobGet']);
      expect(calls.slice(afterRead)).toEqual([]);

      await baton.close();
      expect(calls.slice(afterRead).map((c) => c.op)).toEqual(['close']);
      expect(calls.filter((c) => c.error !== undefined)).toEqual([]);
      const reader = await openBaton({ database: db.url });
      expect((await reader.getJob(job.id)).state).toBe('queued');
    } finally {
      await baton.close();
    }
  });

  it('C05a: with a handler that honours abort, stop + close leave no timer behind and the process exits on its own', async () => {
    // In a child process, so nothing of the test runner is counted.
    const child = spawnTs(fileURLToPath(new URL('../fixtures/stop-exit-process.ts', import.meta.url)), [JSON.stringify({ database: tempDatabase().url })]);
    const claimed = await child.waitFor((m) => m.type === 'claimed', 'claimed');
    const closed = await child.waitFor((m) => m.type === 'closed', 'closed');

    expect(claimed.timersRunning as number).toBeGreaterThan(closed.timersBefore as number);
    expect(closed.summary).toEqual({ finished: 0, released: 1, abandoned: 0, unreleased: [] });
    expect(closed.timersAfter as number).toBeLessThanOrEqual(closed.timersBefore as number);
    expect(closed.resourcesAfter as string[]).not.toContain('Timeout');
    // No timer is left (above), so nothing keeps the process alive: it exits by itself.
    // The wait is a safety net sized for a busy machine, not a speed claim.
    const exit = await Promise.race([child.exited, sleep(30_000).then(() => 'still running 30 s after close')]);
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it('C05b: pollInterval, heartbeatInterval, rescueInterval, leaseTtl, cancelPollInterval refuse 0, -1, NaN, "5" and Infinity with a ConfigError naming the option', async () => {
    const baton = await openBaton();
    const options = ['pollInterval', 'heartbeatInterval', 'rescueInterval', 'leaseTtl', 'cancelPollInterval', 'watchInterval'] as const;
    const values: unknown[] = [0, -1, Number.NaN, '5', Number.POSITIVE_INFINITY];
    for (const option of options) {
      for (const value of values) {
        let thrown: unknown;
        try {
          baton.worker({ tasks: [control], [option]: value } as unknown as WorkerOptions);
        } catch (error) {
          thrown = error;
        }
        expect(thrown, `${option}=${String(value)}`).toBeInstanceOf(ConfigError);
        expect((thrown as ConfigError).message, `${option}=${String(value)}`).toContain(option);
      }
    }
  });

  it('queues with a NUL or a lone surrogate (which no job can carry) → ConfigError naming queues', async () => {
    const baton = await openBaton();
    for (const queue of ['mail\u0000', 'mail\ud800', '\udfff']) {
      let thrown: unknown;
      try {
        baton.worker({ tasks: [control], queues: ['default', queue] });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(queue)).toBeInstanceOf(ConfigError);
      expect((thrown as ConfigError).message, JSON.stringify(queue)).toMatch(/queues\.1: .*(NUL|surrogate)/);
    }
  });

  it('queues empty, a name empty or over 200 characters (no job can carry it), or a name given twice → ConfigError saying which', async () => {
    const baton = await openBaton();
    const cases: Array<[string[], RegExp]> = [
      [[], /worker option queues: must name at least one queue/],
      [['default', ''], /worker option queues\.1: must not be empty/],
      [['x'.repeat(201)], /worker option queues\.0: must be at most 200 characters/],
      [['mail', 'default', 'mail'], /worker option queues: names queue "mail" twice/],
    ];
    for (const [queues, message] of cases) {
      expect(() => baton.worker({ tasks: [control], queues }), JSON.stringify(queues)).toThrow(message);
    }
    expect(baton.worker({ tasks: [control], queues: ['x'.repeat(200), 'default'] }).options.queues).toHaveLength(2);
  });

  it('C05b: explicitly passed undefined means the documented default, and an idle worker with defaults does not busy-loop', async () => {
    const calls: string[] = [];
    const baton = await openBaton({}, (op) => calls.push(op));
    const worker = baton.worker({
      tasks: [control],
      pollInterval: undefined,
      heartbeatInterval: undefined,
      rescueInterval: undefined,
      leaseTtl: undefined,
      cancelPollInterval: undefined,
      watchInterval: undefined,
    });
    expect(worker.options).toMatchObject({
      pollInterval: 1000,
      leaseTtl: 30_000,
      heartbeatInterval: 10_000,
      rescueInterval: 1000,
      cancelPollInterval: 200,
    });
    expect(worker.options.watchInterval).toBeGreaterThanOrEqual(10);
    // The pruner's first pass runs at start (then every 60 s): idle begins after it.
    const pruned = waitForEvent(worker, 'service:completed', (e) => e.service === 'baton:pruner');
    await worker.start();
    await pruned;
    const mark = calls.length;
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Idle for 400 ms with a 1 s poll: at most one claim and one rescue pass.
    expect(calls.slice(mark).filter((op) => op === 'jobClaim').length).toBeLessThanOrEqual(1);
    expect(calls.slice(mark).length).toBeLessThanOrEqual(2);
  });

  it('C05b: heartbeatInterval at or above leaseTtl is a ConfigError', async () => {
    const baton = await openBaton();
    for (const heartbeatInterval of [1000, 2000]) {
      expect(() => baton.worker({ tasks: [control], leaseTtl: 1000, heartbeatInterval })).toThrow(ConfigError);
      expect(() => baton.worker({ tasks: [control], leaseTtl: 1000, heartbeatInterval })).toThrow(/heartbeatInterval.*leaseTtl/);
    }
    expect(baton.worker({ tasks: [control], leaseTtl: 1000, heartbeatInterval: 999 }).options.heartbeatInterval).toBe(999);
    expect(baton.worker({ tasks: [control], leaseTtl: 900 }).options.heartbeatInterval).toBe(300);
  });
});

