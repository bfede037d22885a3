/**
 * OpenTelemetry spans in one process (observe/tracing.ts), with the SDK's in-memory
 * exporter: the enqueue span and the job's stored context, one run span per attempt
 * (the enqueue's children) with its outcome and span events (checkpoint, cancel
 * requested, lease lost, shutdown requested and released, snoozed), the schedule
 * tick's span as the parent of its job's run, and a service run's span. The trace
 * across processes is test/e2e/tracing.test.ts.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { defineService, defineTask, type Baton, type JobContext } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { until, waitForEvent } from '../helpers/events.js';
import { recordSpans, spanJson, type SpanJson } from '../helpers/spans.js';

const exporter = recordSpans();
afterEach(() => exporter.reset());

const spans = (): SpanJson[] => exporter.getFinishedSpans().map(spanJson);
const named = (name: string) => spans().filter((s) => s.name === name);
/** Waits until `count` spans named `name` have ended; returns them in end order. */
const ended = async (name: string, count = 1): Promise<SpanJson[]> => (await until(() => (named(name).length >= count ? named(name) : undefined), `${count} span(s) "${name}"`))!;
const eventNames = (span: SpanJson) => span.events.map((e) => e.name);

/** Resolves the handler's wait on its signal: throws the abort reason. */
const untilAborted = (ctx: JobContext) =>
  new Promise<never>((_, reject) => {
    if (ctx.signal.aborted) reject(ctx.signal.reason as Error);
    ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
  });

/** A task whose handler runs `fn` inside a span `handler` of its own. */
const withHandlerSpan = <R>(fn: (ctx: JobContext) => Promise<R>) => async (_payload: unknown, ctx: JobContext) =>
  trace.getTracer('test').startActiveSpan('handler', async (span) => {
    try {
      return await fn(ctx);
    } finally {
      span.end();
    }
  });

async function startedWorker(baton: Baton, tasks: Parameters<Baton['worker']>[0]['tasks'], options: Partial<Parameters<Baton['worker']>[0]> = {}) {
  const worker = baton.worker({ tasks, concurrency: 2, drainTimeout: 0, abortGrace: 5_000, ...options });
  await worker.start();
  return worker;
}

describe('enqueue spans', () => {
  it('an enqueue is a PRODUCER span, a child of the active span; the job stores its W3C context', async () => {
    const baton = await openBaton();
    const outer = trace.getTracer('test').startSpan('caller');
    const job = await context.with(trace.setSpan(context.active(), outer), () => baton.enqueue('mail', { to: 'a' }, { queue: 'emails' }));
    outer.end();
    const [enqueue] = await ended('enqueue mail');
    const caller = named('caller')[0]!;
    expect(enqueue).toMatchObject({ kind: SpanKind.PRODUCER, traceId: caller.traceId, parentSpanId: caller.spanId });
    expect(enqueue!.attributes).toEqual({
      'messaging.system': 'baton',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'enqueue',
      'messaging.destination.name': 'emails',
      'messaging.message.id': String(job.id),
      'baton.task': 'mail',
    });
    expect(job.traceContext).toEqual({ traceparent: `00-${caller.traceId}-${enqueue!.spanId}-01` });
    expect((await baton.getJob(job.id)).traceContext).toEqual(job.traceContext);
  });

  it('enqueueMany is one span for the batch (count and ids); every job stores its context', async () => {
    const baton = await openBaton();
    const jobs = await baton.enqueueMany([{ task: 'mail' }, { task: 'sms', options: { queue: 'texts' } }]);
    const [enqueue] = await ended('enqueue');
    expect(enqueue!.attributes).toMatchObject({ 'messaging.batch.message_count': 2, 'baton.job.ids': jobs.map((j) => String(j.id)) });
    expect(enqueue!.attributes).not.toHaveProperty('baton.task');
    expect(enqueue!.attributes).not.toHaveProperty('messaging.destination.name');
    expect(enqueue!.parentSpanId).toBeNull();
    for (const job of jobs) expect(job.traceContext).toEqual({ traceparent: `00-${enqueue!.traceId}-${enqueue!.spanId}-01` });
  });

  it('a failed enqueue ends its span with status ERROR', async () => {
    const baton = await openBaton();
    baton.store.jobInsertMany = async () => {
      throw new Error('database down');
    };
    await expect(baton.enqueue('mail')).rejects.toThrow('database down');
    const [enqueue] = await ended('enqueue mail');
    expect(enqueue!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'database down' });
    expect(eventNames(enqueue!)).toContain('exception');
  });
});

describe('run spans', () => {
  it('one CONSUMER span per attempt, each a child of the enqueue span, with the messaging attributes; the handler\'s spans are its children', async () => {
    const baton = await openBaton();
    const flaky = defineTask('flaky', {
      backoff: { type: 'fixed', delay: 0 },
      handler: withHandlerSpan(async (ctx) => {
        await ctx.saveCheckpoint({ at: ctx.job.attempt });
        if (ctx.job.attempt === 1) throw new Error('first attempt fails');
        return 'ok';
      }),
    });
    const worker = await startedWorker(baton, [flaky]);
    const job = await baton.enqueue(flaky, undefined, { maxAttempts: 2 });
    await waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    const [enqueue] = await ended('enqueue flaky');
    const runs = await ended('process flaky', 2);
    expect(runs.map((r) => r.attributes['baton.attempt'])).toEqual([1, 2]);
    for (const run of runs) {
      expect(run).toMatchObject({ kind: SpanKind.CONSUMER, traceId: enqueue!.traceId, parentSpanId: enqueue!.spanId });
      expect(run.attributes).toMatchObject({
        'messaging.system': 'baton',
        'messaging.operation.type': 'process',
        'messaging.destination.name': 'default',
        'messaging.message.id': String(job.id),
        'baton.task': 'flaky',
        'baton.max_attempts': 2,
        'baton.worker.id': worker.id,
      });
      expect(eventNames(run)).toContain('baton.checkpoint');
    }
    const [first, second] = runs;
    expect(first!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'first attempt fails' });
    expect(first!.attributes).toMatchObject({ 'baton.outcome': 'retry' });
    expect(typeof first!.attributes['baton.retry_at']).toBe('string');
    expect(eventNames(first!)).toContain('exception');
    expect(second!.status.code).toBe(SpanStatusCode.UNSET);
    expect(second!.attributes['baton.outcome']).toBe('completed');
    const handlers = named('handler');
    expect(handlers.map((h) => h.parentSpanId).sort()).toEqual(runs.map((r) => r.spanId).sort());
  });

  it('a cancel: the span has a `baton.cancel_requested` event with the reason and ends cancelled', async () => {
    const baton = await openBaton();
    const waits = defineTask('waits', { handler: async (_p: unknown, ctx) => untilAborted(ctx) });
    const worker = await startedWorker(baton, [waits]);
    const job = await baton.enqueue(waits, null);
    await waitForEvent(worker, 'job:claimed', (e) => e.job.id === job.id);
    await baton.cancel(job.id, 'no longer needed');
    await waitForEvent(worker, 'job:cancelled', (e) => e.job.id === job.id);
    const [run] = await ended('process waits');
    expect(run!.events.find((e) => e.name === 'baton.cancel_requested')?.attributes).toEqual({ 'baton.cancel.reason': 'no longer needed' });
    expect(run!.attributes['baton.outcome']).toBe('cancelled');
  });

  it('a shutdown: `baton.shutdown_requested` then `baton.released` (abandoned or not), outcome released, the span ending once the release is written', async () => {
    const baton = await openBaton();
    const waits = defineTask('waits', { handler: async (_p: unknown, ctx) => untilAborted(ctx) });
    const deaf = defineTask('deaf', { handler: () => new Promise<never>(() => undefined) });
    const worker = await startedWorker(baton, [waits, deaf], { abortGrace: 0 });
    // The release yields a turn before it writes, as a database round trip does: the runs
    // are over before it is written, and their spans must wait for it all the same.
    const release = baton.store.jobRelease;
    baton.store.jobRelease = async (params) => {
      await new Promise(setImmediate);
      return release(params);
    };
    const [a, b] = await baton.enqueueMany([{ task: waits, payload: null }, { task: deaf, payload: null }]);
    await until(() => worker.running === 2, 'both jobs running');
    const summary = await worker.stop();
    expect(summary).toMatchObject({ released: 2, abandoned: 1 });
    const byJob = new Map((await ended('process waits')).concat(await ended('process deaf')).map((s) => [s.attributes['messaging.message.id'], s]));
    for (const [id, abandoned] of [[a!.id, false], [b!.id, true]] as const) {
      const run = byJob.get(String(id))!;
      expect(eventNames(run)).toEqual(['baton.shutdown_requested', 'baton.released']);
      expect(run.events[1]!.attributes).toEqual({ 'baton.abandoned': abandoned });
      expect(run.attributes['baton.outcome']).toBe('released');
    }
  });

  it('a snooze: `baton.snoozed` with its delay, outcome snoozed', async () => {
    const baton = await openBaton();
    const later = defineTask('later', { handler: async (_p: unknown, ctx) => ctx.snooze(3_600_000) });
    const worker = await startedWorker(baton, [later]);
    const job = await baton.enqueue(later, null);
    await waitForEvent(worker, 'job:snoozed', (e) => e.job.id === job.id);
    const [run] = await ended('process later');
    expect(run!.events.find((e) => e.name === 'baton.snoozed')?.attributes).toEqual({ 'baton.delay_ms': 3_600_000, 'baton.rate_limited': false });
    expect(run!.attributes['baton.outcome']).toBe('snoozed');
  });

  it('one INTERNAL span `step <name>` per step that runs, a child of the run\'s span, the spans its function makes its children; a replay makes none; a suspension ends the run `waiting`', async () => {
    const baton = await openBaton();
    const stepped = defineTask('stepped', {
      maxAttempts: 2,
      backoff: { type: 'fixed', delay: 0 },
      handler: async (_p: unknown, ctx) => {
        await ctx.step('charge', () => trace.getTracer('test').startActiveSpan('charge call', (span) => (span.end(), 1)));
        await ctx.step('email', () => {
          if (ctx.job.attempt === 1) throw new Error('smtp down');
          return 2;
        });
        await ctx.sleep(1_500); // far above LIVE_WAIT_MS (50): it suspends however long the step write took on a busy machine
      },
    });
    const worker = await startedWorker(baton, [stepped]);
    const job = await baton.enqueue(stepped, null);
    await waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    const runs = await ended('process stepped', 3);
    const charges = await ended('step charge');
    expect(charges).toHaveLength(1); // run once; the retry replays it
    expect(charges[0]!.kind).toBe(SpanKind.INTERNAL);
    expect(charges[0]!.attributes).toMatchObject({ 'baton.step': 'charge', 'messaging.message.id': String(job.id), 'baton.attempt': 1 });
    expect(charges[0]!.parentSpanId).toBe(runs[0]!.spanId);
    expect(named('charge call')[0]!.parentSpanId).toBe(charges[0]!.spanId);
    const emails = await ended('step email', 2);
    expect(emails.map((s) => s.status.code)).toEqual([SpanStatusCode.ERROR, SpanStatusCode.UNSET]);
    expect(runs.map((r) => r.attributes['baton.outcome'])).toEqual(['retry', 'waiting', 'completed']);
    expect(eventNames(runs[1]!)).toContain('baton.step_replayed');
  });

  it('a lost lease: `baton.lease_lost`, outcome lease_lost', async () => {
    const baton = await openBaton();
    const waits = defineTask('waits', { handler: async (_p: unknown, ctx) => untilAborted(ctx) });
    // No heartbeat of its own within the test: the lease is taken away, then one heartbeat finds it gone.
    const worker = await startedWorker(baton, [waits], { leaseTtl: 3_600_000, heartbeatInterval: 1_800_000, pollInterval: 3_600_000 });
    const job = await baton.enqueue(waits, null);
    const claimed = await waitForEvent(worker, 'job:claimed', (e) => e.job.id === job.id);
    // A rescuer an hour and more later finds the lease expired and queues the job again.
    await baton.store.jobRescueExpired({ now: claimed.job.leaseExpiresAt!.getTime() + 1 });
    const lost = waitForEvent(worker, 'lease:lost', (e) => e.job.id === job.id);
    await worker.loops.heartbeat();
    await lost;
    // The first attempt's span (the job, queued again, may be claimed again meanwhile).
    const run = (await until(() => named('process waits').find((s) => s.attributes['baton.attempt'] === 1), 'the first attempt\'s span'))!;
    expect(eventNames(run)).toContain('baton.lease_lost');
    expect(run.attributes['baton.outcome']).toBe('lease_lost');
  });
});

describe('schedule and service spans', () => {
  it('a schedule tick is a PRODUCER span `schedule <name>`; its job stores the tick\'s context and runs as its child', async () => {
    const baton = await openBaton();
    const noop = defineTask('noop', { handler: async () => null });
    const worker = baton.worker({ tasks: [noop], queues: ['ticks'], scheduler: false });
    const info = await baton.schedule('every-second', { every: 1000, task: 'noop', queue: 'ticks' });
    await worker.loops.scheduler(info.nextRunAt!.getTime() + 1);
    const [tick] = await ended('schedule every-second');
    const [job] = await baton.listJobs({ queue: 'ticks' });
    expect(tick).toMatchObject({ kind: SpanKind.PRODUCER, parentSpanId: null });
    expect(tick!.attributes).toMatchObject({
      'messaging.system': 'baton',
      'messaging.destination.name': 'ticks',
      'baton.task': 'noop',
      'baton.schedule': 'every-second',
      'baton.schedule.advanced': true,
      'messaging.message.id': String(job!.id),
    });
    expect(job!.traceContext).toEqual({ traceparent: `00-${tick!.traceId}-${tick!.spanId}-01` });
    // Listening before start(): its first claim can run the job and write its completion
    // (with a claim that follows at once) before start() resolves, once the tick is due.
    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job!.id);
    await worker.start();
    await completed;
    const [run] = await ended('process noop');
    expect(run).toMatchObject({ traceId: tick!.traceId, parentSpanId: tick!.spanId });
    expect(run!.attributes['baton.schedule']).toBe('every-second');
  });

  it('a service run is an INTERNAL span `service <name>`, the parent of the spans its run makes; a throw sets ERROR', async () => {
    const baton = await openBaton();
    let fail = false;
    const report = defineService('report', {
      run: async () =>
        trace.getTracer('test').startActiveSpan('report work', async (span) => {
          span.end();
          if (fail) throw new Error('report failed');
          return new Date(0);
        }),
    });
    const worker = baton.worker({ tasks: [], services: [report] });
    await worker.loops.service('report');
    fail = true;
    await worker.loops.service('report');
    const runs = await ended('service report', 2);
    const works = named('report work');
    expect(runs.map((r) => r.kind)).toEqual([SpanKind.INTERNAL, SpanKind.INTERNAL]);
    expect(runs[0]!.attributes).toMatchObject({ 'baton.service': 'report' });
    expect(typeof runs[0]!.attributes['baton.fencing_token']).toBe('number');
    expect(works.map((w) => w.parentSpanId)).toEqual(runs.map((r) => r.spanId));
    expect(runs.map((r) => r.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.ERROR]);
  });
});
