/**
 * The client inside handlers (issue 30 item 7): `ctx.baton` (this process's Baton, no
 * second createBaton), `ctx.enqueue` / `ctx.enqueueMany` (written at once), and
 * `ctx.enqueueOnComplete` (checked at the call, written in the transaction of the
 * fenced completion, only if it applies: as River's JobCompleteTx). Every wait is on a
 * gate the test opens or an event; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConflictError, ValidationError, defineTask, type Baton, type JobContext, type Worker } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';

/** A promise plus its resolve function. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The follow-up task: records each payload it ran with. */
function nextTask(ran: number[] = []) {
  return defineTask('next', {
    schema: z.object({ n: z.number().int() }),
    handler: async ({ n }) => {
      ran.push(n);
      return n;
    },
  });
}

/** The payloads of the jobs of task `next`, oldest first. */
async function followUps(baton: Baton): Promise<unknown[]> {
  return (await baton.listJobs({ task: 'next' })).map((j) => JSON.parse(j.payloadPreview.text)).reverse();
}

async function started(baton: Baton, options: Parameters<Baton['worker']>[0]): Promise<Worker> {
  const worker = baton.worker(options);
  await worker.start();
  return worker;
}

describe('ctx.baton, ctx.enqueue', () => {
  it('a handler reads jobs and enqueues a child at once (typed by its task), through the Baton its worker was made by', async () => {
    const baton = await openBaton();
    const ran: number[] = [];
    const next = nextTask(ran);
    const childSeen = deferred();
    let client: unknown;
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        client = ctx.baton;
        const child = await ctx.enqueue(next, { n: 1 });
        const [other] = await ctx.enqueueMany([{ task: next, payload: { n: 2 } }]);
        const self = await ctx.baton.getJob(ctx.job.id);
        await childSeen.promise;
        return { child: child.id, other: other!.id, state: self.state };
      },
    });
    // Types: the payload of ctx.enqueue comes from the task, as baton.enqueue's does.
    const typed = (ctx: JobContext) => {
      // @ts-expect-error n must be a number
      void ctx.enqueue(next, { n: 'one' });
      // @ts-expect-error enqueueOnComplete is typed the same way
      void ctx.enqueueOnComplete(next, { m: 1 });
    };
    void typed;
    const worker = await started(baton, { tasks: [parent, next] });
    const enqueued = collectEvents(baton, 'job:enqueued', 2, (e) => e.job.task === 'next');
    const children = collectEvents(worker, 'job:completed', 2, (e) => e.job.task === 'next');
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'parent');
    const job = await baton.enqueue(parent, null);
    // Written at once: the children exist (and run) while the parent still runs.
    const [child, other] = await enqueued;
    await children;
    expect(ran.sort()).toEqual([1, 2]);
    expect((await baton.getJob(job.id)).state).toBe('running');
    childSeen.resolve();
    const completed = await done;
    expect(client).toBe(baton);
    expect(completed.result).toEqual({ child: child!.job.id, other: other!.job.id, state: 'running' });
    expect(completed.enqueued).toEqual([]);
  });
});

describe('ctx.enqueueOnComplete', () => {
  it('writes the follow-ups with the completion, not before, in call order (an unawaited call too); job:completed lists them and they run', async () => {
    const baton = await openBaton();
    const ran: number[] = [];
    const next = nextTask(ran);
    const called = deferred();
    const finish = deferred();
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        await ctx.enqueueOnComplete(next, { n: 1 });
        void ctx.enqueueOnComplete(next, { n: 2 }, { priority: 5 }); // not awaited: still rides along
        called.resolve();
        await finish.promise;
        return 'done';
      },
    });
    const worker = await started(baton, { tasks: [parent, next] });
    const announced = collectEvents(baton, 'job:enqueued', 2, (e) => e.job.task === 'next');
    const nextRuns = collectEvents(worker, 'job:completed', 2, (e) => e.job.task === 'next');
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'parent');
    const job = await baton.enqueue(parent, null);
    await called.promise;
    expect(await followUps(baton)).toEqual([]);
    finish.resolve();
    const completed = await done;
    expect(completed.enqueued.map((j) => [j.payload, j.priority, j.state])).toEqual([[{ n: 1 }, 0, 'queued'], [{ n: 2 }, 5, 'queued']]);
    expect((await announced).map((e) => e.job.id)).toEqual(completed.enqueued.map((j) => j.id));
    expect((await baton.getJob(job.id)).state).toBe('completed');
    await nextRuns;
    expect(ran.sort()).toEqual([1, 2]);
  });

  it('refuses a bad payload or option at the call, recording nothing; refuses a call after the handler returned', async () => {
    const baton = await openBaton();
    const next = nextTask();
    const refusals: unknown[] = [];
    let saved: JobContext | undefined;
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        saved = ctx;
        await ctx.enqueueOnComplete(next, { n: 'x' } as never).catch((error: unknown) => refusals.push(error));
        await ctx.enqueueOnComplete(next, { n: 1 }, { delay: -1 }).catch((error: unknown) => refusals.push(error));
        await ctx.enqueueOnComplete(next, { n: 1 }, { client: {} as never }).catch((error: unknown) => refusals.push(error));
        await ctx.enqueueOnComplete(next, { n: 7 });
        return null;
      },
    });
    const worker = await started(baton, { tasks: [parent] });
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'parent');
    await baton.enqueue(parent, null);
    const completed = await done;
    expect(refusals).toHaveLength(3);
    for (const error of refusals) expect(error).toBeInstanceOf(ValidationError);
    const [payload, delay, client] = refusals as ValidationError[];
    expect(payload!.subject).toBe('payload');
    expect(payload!.issues.map((i) => i.path)).toEqual([['n']]);
    expect(delay!.issues.map((i) => i.path)).toEqual([['delay']]);
    expect(client!.issues.map((i) => i.path)).toEqual([['client']]);
    // Only the good one was written.
    expect(completed.enqueued.map((j) => j.payload)).toEqual([{ n: 7 }]);
    expect(await followUps(baton)).toEqual([{ n: 7 }]);
    await expect(saved!.enqueueOnComplete(next, { n: 8 })).rejects.toBeInstanceOf(ConflictError);
    expect(await followUps(baton)).toEqual([{ n: 7 }]);
  });

  it('writes nothing for an attempt that throws; the attempt that completes writes its own, once', async () => {
    const baton = await openBaton();
    const next = nextTask();
    const parent = defineTask('parent', {
      maxAttempts: 3,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_: null, ctx) => {
        await ctx.enqueueOnComplete(next, { n: ctx.job.attempt });
        if (ctx.job.attempt < 3) throw new Error(`attempt ${ctx.job.attempt} fails`);
        return 'ok';
      },
    });
    const worker = await started(baton, { tasks: [parent] });
    const failures = collectEvents(worker, 'job:failed', 2);
    const done = waitForEvent(worker, 'job:completed');
    await baton.enqueue(parent, null);
    await failures;
    expect((await done).enqueued.map((j) => j.payload)).toEqual([{ n: 3 }]);
    expect(await followUps(baton)).toEqual([{ n: 3 }]);
  });

  it('writes nothing for a cancelled job', async () => {
    const baton = await openBaton();
    const next = nextTask();
    const called = deferred();
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        await ctx.enqueueOnComplete(next, { n: 1 });
        called.resolve();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        throw ctx.signal.reason;
      },
    });
    const worker = await started(baton, { tasks: [parent] });
    const cancelled = waitForEvent(worker, 'job:cancelled');
    const job = await baton.enqueue(parent, null);
    await called.promise;
    await baton.cancel(job.id, 'not needed');
    await cancelled;
    expect((await baton.getJob(job.id)).state).toBe('cancelled');
    expect(await followUps(baton)).toEqual([]);
  });

  it('writes nothing for a run whose lease was lost; the run that completes the job writes its own', async () => {
    const baton = await openBaton();
    const next = nextTask();
    const calledOnce = deferred();
    const gate = deferred();
    const parent = defineTask('parent', {
      maxAttempts: 3,
      handler: async (_: null, ctx) => {
        await ctx.enqueueOnComplete(next, { n: ctx.job.attempt });
        if (ctx.job.attempt === 1) {
          calledOnce.resolve();
          await gate.promise; // meanwhile the lease expires and the job is rescued
        }
        return ctx.job.attempt;
      },
    });
    // The worker's clock jumps past the rescue below, so the requeued job is due for it at once.
    let ahead = 0;
    const worker = await started(baton, { tasks: [parent], concurrency: 1, clock: { now: () => Date.now() + ahead } });
    const lost = waitForEvent(worker, 'lease:lost');
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(parent, null);
    await calledOnce.promise;
    // As the rescuer would once the lease expired (a frozen process): the attempt counts, the job is queued again.
    const later = 10 * 60_000;
    expect((await baton.store.jobRescueExpired({ now: Date.now() + later })).requeued).toEqual([job.id]);
    ahead = later + 1000;
    gate.resolve();
    expect((await lost).job.attempt).toBe(1);
    const completed = await done;
    expect(completed.job.attempt).toBe(2);
    expect(completed.enqueued.map((j) => j.payload)).toEqual([{ n: 2 }]);
    expect(await followUps(baton)).toEqual([{ n: 2 }]);
  });

  it('writes nothing for a run released at shutdown; the worker that completes it later writes its own', async () => {
    const { url } = tempDatabase();
    const baton = await openBaton({ database: url });
    const next = nextTask();
    const called = deferred();
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        await ctx.enqueueOnComplete(next, { n: ctx.job.attempt });
        if (!ctx.checkpoint) {
          await ctx.saveCheckpoint({ first: true });
          called.resolve();
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          throw ctx.signal.reason;
        }
        return 'resumed';
      },
    });
    const first = await started(baton, { tasks: [parent], drainTimeout: 0 });
    const released = waitForEvent(first, 'job:released');
    const job = await baton.enqueue(parent, null);
    await called.promise;
    await first.stop();
    await released;
    expect((await baton.getJob(job.id)).state).toBe('queued');
    expect(await followUps(baton)).toEqual([]);
    const second = baton.worker({ tasks: [parent] });
    const done = waitForEvent(second, 'job:completed');
    await second.start();
    const completed = await done;
    expect(completed.job.attempt).toBe(1); // a release does not count the attempt
    expect(await followUps(baton)).toEqual([{ n: 1 }]);
  });
});

describe('C02: outcome or child enqueue while the worker drains', () => {
  it('C02: during close(), a failing job is recorded for retry, and a job that enqueues a child at once and another with its completion completes: every write lands', async () => {
    const { url } = tempDatabase();
    const baton = await openBaton({ database: url });
    const sleepy = defineTask('sleepy', { handler: async () => null });
    const next = nextTask();
    const bothRunning = { a: deferred(), b: deferred() };
    const drain = deferred();
    const boom = defineTask('boom', {
      maxAttempts: 3,
      backoff: { type: 'fixed', delay: 60_000 },
      handler: async (_: null) => {
        bothRunning.a.resolve();
        await drain.promise;
        throw new Error('x');
      },
    });
    const parent = defineTask('parent', {
      handler: async (_: null, ctx) => {
        bothRunning.b.resolve();
        await drain.promise;
        await ctx.enqueue(sleepy, null); // C: at once, while the worker drains
        await ctx.enqueueOnComplete(next, { n: 1 }); // D: with B's completion
        return { ok: true };
      },
    });
    const worker = await started(baton, { tasks: [boom, parent, sleepy, next], concurrency: 2 });
    const a = await baton.enqueue(boom, null);
    const b = await baton.enqueue(parent, null);
    await Promise.all([bothRunning.a.promise, bothRunning.b.promise]);
    const stopping = waitForEvent(worker, 'worker:stopping');
    const failed = waitForEvent(worker, 'job:failed');
    const completed = waitForEvent(worker, 'job:completed');
    const closed = baton.close();
    await stopping;
    drain.resolve();
    const failure = await failed;
    expect((await completed).enqueued.map((j) => j.task)).toEqual(['next']);
    await closed;

    // Read back from a new Baton on the same database: every write of the drain landed.
    const after = await openBaton({ database: url });
    const jobA = await after.getJob(a.id);
    expect(jobA).toMatchObject({ state: 'queued', attempt: 1 });
    expect(jobA.errors.map((e) => e.message)).toEqual(['x']);
    expect(jobA.runAt.getTime() - failure.retryAt!.getTime()).toBe(0);
    expect(jobA.runAt.getTime()).toBeGreaterThanOrEqual(jobA.errors[0]!.time.getTime() + 60_000);
    expect(await after.getJob(b.id)).toMatchObject({ state: 'completed', result: { ok: true } });
    expect((await after.listJobs({ task: 'sleepy' })).map((j) => j.state)).toEqual(['queued']);
    expect(await followUps(after)).toEqual([{ n: 1 }]);
    expect(await after.listJobs({ state: 'running' })).toEqual([]);
  });
});
