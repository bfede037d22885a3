import { describe, expect, it } from 'vitest';
import { defineTask, jobView, NonRetryableError, ValidationError, type Json } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

/** Counts each step function's runs, by label. */
function runs() {
  const counts = new Map<string, number>();
  return {
    counts,
    bump: (label: string) => counts.set(label, (counts.get(label) ?? 0) + 1),
    of: (label: string) => counts.get(label) ?? 0,
  };
}

describe('ctx.step', () => {
  it('runs a step at most once to success across attempts: a retry replays the steps before the failure', async () => {
    const baton = await openBaton();
    const r = runs();
    const pipeline = defineTask('pipeline', {
      maxAttempts: 3,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        const a = await ctx.step('charge', () => (r.bump('charge'), { charged: 42 }));
        const b = await ctx.step('reserve', () => {
          r.bump('reserve');
          if (ctx.job.attempt === 1) throw new Error('warehouse down');
          return 'reserved';
        });
        const c = await ctx.step('email', () => (r.bump('email'), null));
        return { a, b, c };
      },
    });
    const worker = baton.worker({ tasks: [pipeline], concurrency: 1 });
    const stepEvents = collectEvents(worker, 'job:step', 5);
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(pipeline, null);
    const { result } = await done;
    expect(result).toEqual({ a: { charged: 42 }, b: 'reserved', c: null });
    expect([r.of('charge'), r.of('reserve'), r.of('email')]).toEqual([1, 2, 1]);
    const events = await stepEvents;
    expect(events.map((e) => `${e.step}:${e.outcome}`)).toEqual(['charge:run', 'reserve:failed', 'charge:replayed', 'reserve:run', 'email:run']);
    const steps = await baton.store.jobStepList({ id: job.id });
    expect(steps.map((s) => [s.name, s.seq, s.state, s.attempt])).toEqual([['charge', 1, 'completed', 1], ['reserve', 2, 'completed', 2], ['email', 3, 'completed', 2]]);
  });

  it('names repeated steps name#N, so loops replay step by step', async () => {
    const baton = await openBaton();
    const r = runs();
    const loop = defineTask('loop', {
      maxAttempts: 2,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        const out: number[] = [];
        for (let i = 0; i < 4; i++) {
          out.push(await ctx.step('item', () => {
            r.bump(`item${i}`);
            if (i === 2 && ctx.job.attempt === 1) throw new Error('flaky');
            return i * 10;
          }));
        }
        return out;
      },
    });
    const worker = baton.worker({ tasks: [loop], concurrency: 1 });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(loop, null);
    expect((await done).result).toEqual([0, 10, 20, 30]);
    expect([0, 1, 2, 3].map((i) => r.of(`item${i}`))).toEqual([1, 1, 2, 1]);
    expect((await baton.store.jobStepList({ id: job.id })).map((s) => s.name)).toEqual(['item', 'item#2', 'item#3', 'item#4']);
  });

  it('keeps completed steps across a deploy that reorders and adds steps, and reports a step never reached as orphaned', async () => {
    const baton = await openBaton();
    const r = runs();
    let deploy = 1;
    const flow = defineTask('flow', {
      maxAttempts: 2,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        if (deploy === 1) {
          await ctx.step('a', () => (r.bump('a'), 'A'));
          await ctx.step('old', () => (r.bump('old'), 'OLD'));
          deploy = 2; // the "deploy" happens while the attempt fails
          throw new Error('crash before b');
        }
        const b = await ctx.step('b', () => (r.bump('b'), 'B')); // added, and now first
        const a = await ctx.step('a', () => (r.bump('a'), 'A2'));
        return [b, a];
      },
    });
    const worker = baton.worker({ tasks: [flow], concurrency: 1 });
    await worker.start();
    const orphaned = waitForEvent(worker, 'job:steps-orphaned');
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(flow, null);
    expect((await done).result).toEqual(['B', 'A']);
    expect([r.of('a'), r.of('old'), r.of('b')]).toEqual([1, 1, 1]);
    expect((await orphaned).steps).toEqual(['old']);
    const { timeline } = await baton.getJobTimeline(job.id);
    expect(timeline.filter((e) => e.type === 'stepsOrphaned').map((e) => e.summary)).toEqual([expect.stringContaining('without reaching stored step "old"')]);
  });

  it('retries a step inside the run with its own maxAttempts and backoff, without failing the attempt', async () => {
    const baton = await openBaton();
    let tries = 0;
    const flaky = defineTask('flaky', {
      maxAttempts: 1,
      handler: (_: null, ctx) => ctx.step('call', () => {
        if (++tries < 3) throw new Error(`try ${tries}`);
        return tries;
      }, { maxAttempts: 3, backoff: { type: 'fixed', delay: 1 } }),
    });
    const worker = baton.worker({ tasks: [flaky], concurrency: 1 });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(flaky, null);
    expect((await done).result).toBe(3);
    const [step] = await baton.store.jobStepList({ id: job.id });
    expect(step).toMatchObject({ name: 'call', state: 'completed', tries: 3, attempt: 1 });
  });

  it('times out a try with the step timeout (its signal aborts) and fails the attempt', async () => {
    const baton = await openBaton();
    let sawAbort = false;
    const slow = defineTask('slow', {
      maxAttempts: 1,
      handler: (_: null, ctx) => ctx.step('hang', (signal) => new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          sawAbort = true;
          reject(signal.reason as Error);
        });
      }), { timeout: 20 }),
    });
    const worker = baton.worker({ tasks: [slow], concurrency: 1 });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(slow, null);
    expect((await failed).message).toBe('step "hang" timed out after 20 ms'); // the step's timeout, not the job's
    expect(sawAbort).toBe(true);
    expect((await baton.store.jobStepList({ id: job.id }))[0]).toMatchObject({ name: 'hang', state: 'failed' });
  });

  it('a step running beside a wait that suspends is saved before the run suspends: its function runs once', async () => {
    const baton = await openBaton();
    const r = runs();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const both = defineTask('both', {
      handler: async (_: null, ctx) => {
        const [, value] = await Promise.all([
          ctx.sleep(500), // over LIVE_WAIT_MS: it suspends the run while the step still runs
          ctx.step('side effect', async () => {
            r.bump('side effect');
            await gate;
            // Yield while the handler's Promise.all has already rejected with the suspension:
            // without the fix, the run suspends here and this step's save is refused.
            for (let i = 0; i < 200 && !(await baton.getJob(ctx.job.id)).wait; i++) await new Promise((resolve) => setImmediate(resolve));
            return 7;
          }),
        ]);
        return value;
      },
    });
    const worker = baton.worker({ tasks: [both], concurrency: 1 });
    await worker.start();
    const waiting = waitForEvent(worker, 'job:waiting');
    const done = waitForEvent(worker, 'job:completed');
    const slept = waitForEvent(worker, 'job:step', (e) => e.step.startsWith('baton:sleep'));
    await baton.enqueue(both, null);
    await slept;
    release(); // the step's function ends only once the sleep has stored its end and is suspending the run
    await waiting;
    expect((await done).result).toBe(7);
    expect(r.of('side effect')).toBe(1);
  });

  it('refuses a step called after the handler returned, before its function runs', async () => {
    const baton = await openBaton();
    let ran = false;
    let late!: Promise<unknown>;
    const leaky = defineTask('leaky', {
      handler: async (_: null, ctx) => {
        late = Promise.resolve().then(() => new Promise((resolve) => setImmediate(resolve))).then(() => ctx.step('after', () => (ran = true)));
        late.catch(() => undefined);
        return null;
      },
    });
    const worker = baton.worker({ tasks: [leaky], concurrency: 1 });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    await baton.enqueue(leaky, null);
    await done;
    await expect(late).rejects.toThrow('step "after" called after the handler returned or threw');
    expect(ran).toBe(false);
  });

  it('fails the job for good on a step result that is not JSON or over the limit, and keeps the steps before it', async () => {
    const baton = await openBaton({ payloadLimit: 1024 });
    const bad = defineTask('bad', {
      maxAttempts: 3,
      handler: async (payload: { big: boolean }, ctx) => {
        await ctx.step('ok', () => 1);
        if (payload.big) await ctx.step('big', () => 'x'.repeat(2000));
        else await ctx.step('fn', () => (() => 1) as unknown as Json);
      },
    });
    const worker = baton.worker({ tasks: [bad], concurrency: 1 });
    await worker.start();
    for (const big of [false, true]) {
      const failed = waitForEvent(worker, 'job:failed');
      const job = await baton.enqueue(bad, { big });
      const event = await failed;
      expect(event.error).toBeInstanceOf(NonRetryableError);
      expect(event.retryAt).toBeNull();
      expect(event.message).toMatch(big ? /step "big" returned an invalid result.*(too large|limit)/i : /step "fn" returned an invalid result.*JSON/i);
      const after = await baton.getJob(job.id);
      expect(after.state).toBe('failed');
      expect((await baton.store.jobStepList({ id: job.id })).map((s) => s.name)).toEqual(['ok']);
    }
  });

  it('refuses bad step names and options with a ValidationError before running anything', async () => {
    const baton = await openBaton();
    const seen: unknown[] = [];
    const t = defineTask('t', {
      maxAttempts: 1,
      handler: async (_: null, ctx) => {
        for (const call of [
          () => ctx.step('', () => 1),
          () => ctx.step('baton:sleep', () => 1),
          () => ctx.step('x', () => 1, { maxAttempts: 0 }),
          () => ctx.step('x', () => 1, { timeout: -5 } as never),
          () => ctx.step('x', 'nope' as never),
        ]) seen.push(await call().catch((e: unknown) => e));
        return 'done';
      },
    });
    const worker = baton.worker({ tasks: [t], concurrency: 1 });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(t, null);
    await done;
    expect(seen.every((e) => e instanceof ValidationError)).toBe(true);
    expect(await baton.store.jobStepList({ id: job.id })).toEqual([]);
    expect(jobView(await baton.getJob(job.id), Date.now())).toBe('completed');
  });
});

describe('a step in a run whose lease ran out (found by the soak, issue 34)', () => {
  it('does not run its function once the lease has run out by the worker\'s clock (the process frozen past it): the run ends lease-lost, the step unstored', async () => {
    // A run frozen mid-handler past its lease woke and ran a step the job's next run had
    // already completed: the save was refused, but the function's effects had happened.
    // Here the worker's clock jumps past the lease while the handler waits between steps.
    const baton = await openBaton();
    const ran: string[] = [];
    let resume!: () => void;
    const between = new Promise<void>((resolve) => (resume = resolve));
    let paused!: () => void;
    const atPause = new Promise<void>((resolve) => (paused = resolve));
    const task = defineTask('frozen-between-steps', {
      handler: async (_: null, ctx) => {
        await ctx.step('a', () => ran.push('a'));
        paused();
        await between;
        await ctx.step('b', () => ran.push('b'));
        return 'done';
      },
    });
    const job = await baton.enqueue(task, null);
    let now = baton.store.clock.now() + 1_000; // Baton's time (PostgreSQL: the server's), a second on: the job is due by this clock
    const slow = 2_147_483_647; // no heartbeat, rescue or poll during the test: the clock alone moves
    const worker = baton.worker({ tasks: [task], pollInterval: slow, leaseTtl: 600_000, heartbeatInterval: 599_999, rescueInterval: slow, clock: { now: () => now } });
    const lost = waitForEvent(worker, 'lease:lost');
    const ended = waitForEvent(worker, 'job:aborted');
    await worker.start();
    await atPause;
    now += 600_001; // past the lease, with no heartbeat in between: as a process frozen that long sees it
    resume();
    expect((await lost).job.id).toBe(job.id);
    await ended;
    expect(ran).toEqual(['a']);
    expect((await baton.getJobSteps(job.id)).map((s) => s.name)).toEqual(['a']);
    await worker.stop();
  });
});
