import { describe, expect, it } from 'vitest';
import { ConflictError, defineTask, jobView, NotFoundError, ValidationError, type Json } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';

const ms = (date: Date) => date.getTime();
import { waitForEvent } from '../helpers/events.js';

describe('ctx.sleep', () => {
  it('frees the slot for another job, counts no attempt, shows the job waiting, and resumes after the sleep', async () => {
    const baton = await openBaton();
    let charged = 0;
    let sleptAt = 0;
    let resumedAt = 0;
    const nap = defineTask('nap', {
      handler: async (_: null, ctx) => {
        await ctx.step('charge', () => ++charged);
        sleptAt ||= Date.now();
        await ctx.sleep(2000);
        resumedAt = Date.now();
        return ctx.job.attempt;
      },
    });
    const quick = defineTask('quick', { handler: async () => 'quick' });
    const worker = baton.worker({ tasks: [nap, quick], concurrency: 1 });
    const steps: string[] = [];
    worker.on('job:step', (e) => steps.push(`${e.step}:${e.outcome}`));
    await worker.start();
    const waiting = waitForEvent(worker, 'job:waiting');
    const napDone = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'nap');
    const job = await baton.enqueue(nap, null);
    const { wait } = await waiting;
    expect(wait.kind).toBe('sleep');

    const during = await baton.getJob(job.id);
    expect(during.state).toBe('queued');
    expect(during.wait).toEqual({ kind: 'sleep', until: wait.until });
    expect(during.attempt).toBe(0);
    expect(jobView(during, Date.now())).toBe('waiting');
    expect((await baton.getJobTimeline(job.id)).timeline.map((e) => e.type)).toContain('waiting');
    // A sleeping job is not promoted: run now, it would only suspend again.
    expect((await baton.promote(job.id)).outcome).toBe('unchanged');
    expect(ms((await baton.getJob(job.id)).runAt)).toBe(wait.until.getTime());

    // The one slot is free: a quick job runs while the sleeper waits.
    const quickDone = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'quick');
    await baton.enqueue(quick, null);
    await quickDone;
    expect((await baton.getJob(job.id)).state).toBe('queued');

    const { result } = await napDone;
    expect(result).toBe(1); // the suspension did not count an attempt
    expect(charged).toBe(1);
    expect(resumedAt - sleptAt).toBeGreaterThanOrEqual(1990); // the store's clock may round by a few ms
    const after = await baton.getJob(job.id);
    expect(after.wait).toBeNull();
    expect(after.attempt).toBe(1);
    // The sleep is a step of its own, reported as any step is.
    expect(steps).toEqual(['charge:run', 'baton:sleep:run', 'charge:replayed', 'baton:sleep:replayed']);

  });

  it('resumes on whichever worker claims it', async () => {
    const baton = await openBaton();
    const ran: string[] = [];
    const nap = defineTask('nap', {
      handler: async (_: null, ctx) => {
        await ctx.step('first', () => ran.push(`first@${ctx.job.leaseOwner}`));
        await ctx.sleep(300);
        return ctx.job.leaseOwner;
      },
    });
    const one = baton.worker({ tasks: [nap], concurrency: 1 });
    await one.start();
    const waiting = waitForEvent(one, 'job:waiting');
    await baton.enqueue(nap, null);
    await waiting;
    await one.stop();
    const two = baton.worker({ tasks: [nap], concurrency: 1 });
    const done = waitForEvent(two, 'job:completed');
    await two.start();
    expect((await done).result).toBe(two.id);
    expect(ran).toEqual([`first@${one.id}`]);
  });

  it('ends cancelled at once on a cancel during the sleep', async () => {
    const baton = await openBaton();
    let after = false;
    const nap = defineTask('nap', {
      handler: async (_: null, ctx) => {
        await ctx.sleep(60_000);
        after = true;
      },
    });
    const worker = baton.worker({ tasks: [nap], concurrency: 1 });
    await worker.start();
    const waiting = waitForEvent(worker, 'job:waiting');
    const job = await baton.enqueue(nap, null);
    await waiting;
    const answer = await baton.cancel(job.id, 'not needed');
    expect(answer.outcome).toBe('cancelled');
    expect((await baton.getJob(job.id)).state).toBe('cancelled');
    expect(after).toBe(false);
  });

  it('refuses a negative, fractional or NaN sleep and an invalid date with a ValidationError, the job intact', async () => {
    const baton = await openBaton();
    const seen: unknown[] = [];
    const t = defineTask('t', {
      handler: async (_: null, ctx) => {
        for (const call of [() => ctx.sleep(-1), () => ctx.sleep(Number.NaN), () => ctx.sleep(1.5), () => ctx.sleepUntil(new Date('nope'))]) {
          seen.push(await call().catch((e: unknown) => e));
        }
        return 'ok';
      },
    });
    const worker = baton.worker({ tasks: [t], concurrency: 1 });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(t, null);
    expect((await done).result).toBe('ok');
    expect(seen.map((e) => e instanceof ValidationError)).toEqual([true, true, true, true]);
    expect(await baton.store.jobStepList({ id: job.id })).toEqual([]);
  });
});

describe('messages: baton.send and ctx.receive', () => {
  const inbox = defineTask('inbox', {
    handler: async (payload: { timeout?: number; times?: number }, ctx) => {
      const got: Array<Json | null> = [];
      for (let i = 0; i < (payload.times ?? 1); i++) got.push(await ctx.receive('shipped', payload.timeout === undefined ? undefined : { timeout: payload.timeout }));
      return got;
    },
  });

  it('keeps a message sent before the receive and delivers it at once', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(inbox, {}, { delay: 60_000 });
    const sent = await baton.send(job.id, 'shipped', { tracking: 'T1' });
    expect(sent).toMatchObject({ jobId: job.id, created: true });
    await baton.promote(job.id);
    const worker = baton.worker({ tasks: [inbox], concurrency: 1 });
    const done = waitForEvent(worker, 'job:completed');
    let suspended = false;
    worker.on('job:waiting', () => (suspended = true));
    await worker.start();
    expect((await done).result).toEqual([{ tracking: 'T1' }]);
    expect(suspended).toBe(false);
  });

  it('wakes a job suspended on the receive, by id or by key, and delivers each message once', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [inbox], concurrency: 1 });
    await worker.start();
    const waiting = waitForEvent(worker, 'job:waiting');
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(inbox, { times: 2 }, { key: 'order-7' });
    const { wait } = await waiting;
    expect(wait).toMatchObject({ kind: 'message', topic: 'shipped' });
    expect(jobView(await baton.getJob(job.id), Date.now())).toBe('waiting');
    await baton.send({ key: 'order-7' }, 'shipped', 'first');
    await baton.send(job.id, 'shipped', 'second');
    expect((await done).result).toEqual(['first', 'second']);
    const steps = await baton.store.jobStepList({ id: job.id });
    expect(steps.map((s) => [s.name, s.state, s.result])).toEqual([['baton:receive:shipped', 'completed', '"first"'], ['baton:receive:shipped#2', 'completed', '"second"']]);
  });

  it('stores a message sent twice with one idempotency key once; a receive with nothing left times out with null', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(inbox, { times: 2, timeout: 300 }, { delay: 60_000 });
    const first = await baton.send(job.id, 'shipped', 'once', { idempotencyKey: 'k1' });
    const again = await baton.send(job.id, 'shipped', 'twice', { idempotencyKey: 'k1' });
    expect(again).toEqual({ ...first, created: false });
    await baton.promote(job.id);
    const worker = baton.worker({ tasks: [inbox], concurrency: 1 });
    const done = waitForEvent(worker, 'job:completed');
    await worker.start();
    expect((await done).result).toEqual(['once', null]);
  });

  it('refuses a send to a finished or unknown job, a bad target, topic or payload, and a bad receive topic', async () => {
    const baton = await openBaton();
    const echo = defineTask('echo', { handler: async () => 'done' });
    const worker = baton.worker({ tasks: [echo], concurrency: 1 });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const finished = await baton.enqueue(echo, null);
    await done;
    await expect(baton.send(finished.id, 'shipped', 1)).rejects.toThrow(ConflictError);
    await expect(baton.send(finished.id, 'shipped', 1)).rejects.toThrow(/completed/);
    await expect(baton.send(987654, 'shipped', 1)).rejects.toThrow(NotFoundError);
    await expect(baton.send({ key: 'nobody' }, 'shipped', 1)).rejects.toThrow(NotFoundError);
    for (const target of [0, -1, 1.5, 'x', { id: 1 }, null]) await expect(baton.send(target as never, 'shipped', 1)).rejects.toThrow(ValidationError);
    const queued = await baton.enqueue(echo, null, { delay: 60_000 });
    await expect(baton.send(queued.id, '', 1)).rejects.toThrow(ValidationError);
    await expect(baton.send(queued.id, 'shipped', null)).rejects.toThrow(ValidationError);
    await expect(baton.send(queued.id, 'shipped', (() => 1) as never)).rejects.toThrow(ValidationError);

    const seen: unknown[] = [];
    const bad = defineTask('bad', {
      handler: async (_: null, ctx) => {
        for (const call of [() => ctx.receive(42 as never), () => ctx.receive(''), () => ctx.receive('t', { timeout: -1 }), () => ctx.receive('t', { wait: 1 } as never)]) {
          seen.push(await call().catch((e: unknown) => e));
        }
        return 'ok';
      },
    });
    const other = baton.worker({ tasks: [bad], concurrency: 1 });
    await other.start();
    const badDone = waitForEvent(other, 'job:completed');
    await baton.enqueue(bad, null);
    await badDone;
    expect(seen.map((e) => e instanceof ValidationError)).toEqual([true, true, true, true]);
  });
});
