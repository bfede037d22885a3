/**
 * /metrics after running jobs in-process: the Prometheus text parses and its
 * counts match the jobs run (both drivers).
 */
import { describe, expect, it } from 'vitest';
import { defineTask, NonRetryableError, RateLimitedError } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { orderTask, waitingOrder, renamedTask } from '../helpers/steps.js';

const ok = defineTask('ok', { handler: async (p: { n: number }) => p.n });
const bad = defineTask('bad', {
  maxAttempts: 1,
  handler: async () => {
    throw new NonRetryableError('no');
  },
});
const slow = defineTask('slow', {
  handler: async (_p: unknown, ctx) => {
    await new Promise((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
    });
  },
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format: `# HELP`/`# TYPE` lines and `name{labels} value` samples. */
function parse(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (line.startsWith('# HELP ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    const value = m[3] === '+Inf' ? Infinity : Number(m[3]);
    if (Number.isNaN(value)) throw new Error(`bad value in: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { samples, types };
}

const value = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);

describe('/metrics', () => {
  it('counts match the jobs run; histograms and gauges are consistent', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    const N = 7;
    for (let i = 0; i < N; i++) await baton.enqueue(ok, { n: i });
    await baton.enqueue(ok, { n: 99 }, { queue: 'other' });
    for (let i = 0; i < 2; i++) await baton.enqueue(bad, {});
    const blocked = await baton.enqueue(slow, {});
    const worker = baton.worker({ tasks: [ok, bad, slow], pollInterval: 50, cancelPollInterval: 50 });
    let settled = 0;
    const done = new Promise<void>((resolve) => {
      const tick = () => ++settled === N + 2 && resolve();
      worker.on('job:completed', tick);
      worker.on('job:failed', tick);
    });
    const claimedSlow = waitForEvent(worker, 'job:claimed', (e) => e.job.id === blocked.id);
    await worker.start();
    await Promise.all([done, claimedSlow]);

    let { samples, types } = parse(await (await app.fetch(new Request('http://localhost/metrics'))).text());
    expect(types.get('baton_jobs_enqueued_total')).toBe('counter');
    expect(types.get('baton_job_duration_seconds')).toBe('histogram');
    expect(types.get('baton_queue_jobs')).toBe('gauge');
    expect(value(samples, 'baton_jobs_enqueued_total', { queue: 'default' })).toBe(N + 3);
    expect(value(samples, 'baton_jobs_enqueued_total', { queue: 'other' })).toBe(1);
    expect(value(samples, 'baton_jobs_completed_total', { task: 'ok' })).toBe(N);
    expect(value(samples, 'baton_jobs_failed_total', { task: 'bad', final: 'true' })).toBe(2);
    expect(value(samples, 'baton_job_duration_seconds_count', { task: 'ok' })).toBe(N);
    expect(value(samples, 'baton_job_duration_seconds_bucket', { task: 'ok', le: '+Inf' })).toBe(N);
    expect(value(samples, 'baton_job_queue_wait_seconds_count', {})).toBe(N + 3);
    expect(value(samples, 'baton_jobs_running', { queue: 'default' })).toBe(1);
    expect(value(samples, 'baton_queue_jobs', { queue: 'default', state: 'completed' })).toBe(N);
    expect(value(samples, 'baton_queue_jobs', { queue: 'default', state: 'failed' })).toBe(2);
    expect(value(samples, 'baton_queue_jobs', { queue: 'other', state: 'queued' })).toBe(1);

    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === blocked.id);
    await baton.cancel(blocked.id, 'stop');
    await cancelled;
    await worker.stop();
    const text = await (await app.fetch(new Request('http://localhost/metrics'))).text();
    ({ samples } = parse(text));
    expect(value(samples, 'baton_jobs_cancelled_total', { task: 'slow' })).toBe(1);
    expect(value(samples, 'baton_jobs_running', {})).toBe(0);
    expect(value(samples, 'baton_queue_jobs', { queue: 'default', state: 'cancelled' })).toBe(1);
    // The cancel latency is observed once the job's row is read back.
    await expect.poll(async () => value(parse(await (await app.fetch(new Request('http://localhost/metrics'))).text()).samples, 'baton_cancel_latency_seconds_count', {})).toBe(1);
    app.metrics.close();
  });

  it('flow control: the queue limit gauge lists limited queues only; snoozes count by rate_limited', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    const limited = defineTask('limited', {
      handler: async (mode: string, ctx) => {
        if (ctx.checkpoint !== null) return 'done';
        await ctx.saveCheckpoint(1);
        if (mode === 'rate') throw new RateLimitedError(10);
        return ctx.snooze(10);
      },
    });
    await baton.enqueue(limited, 'rate', { queue: 'api' });
    await baton.enqueue(limited, 'plain', { queue: 'other' });
    await baton.queues.setConcurrency('api', 4);
    const worker = baton.worker({ tasks: [limited], queues: ['api', 'other'], pollInterval: 20 });
    let completed = 0;
    const done = new Promise<void>((resolve) => worker.on('job:completed', () => ++completed === 2 && resolve()));
    await worker.start();
    await done;
    const { samples, types } = parse(await (await app.fetch(new Request('http://localhost/metrics'))).text());
    expect(types.get('baton_queue_concurrency_limit')).toBe('gauge');
    expect(samples.filter((x) => x.name === 'baton_queue_concurrency_limit')).toEqual([{ name: 'baton_queue_concurrency_limit', labels: { queue: 'api' }, value: 4 }]);
    expect(value(samples, 'baton_jobs_snoozed_total', { queue: 'api', rate_limited: 'true' })).toBe(1);
    expect(value(samples, 'baton_jobs_snoozed_total', { queue: 'other', rate_limited: 'false' })).toBe(1);
  });

  it('flow control: rate gauges by scope with the window used; the busiest concurrency keys by state', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const perCustomer = defineTask('per-customer', { concurrency: { key: (p: { customer: string }) => p.customer, limit: 1 }, handler: () => gate });
    for (const customer of ['a', 'a', 'a', 'b']) await baton.enqueue(perCustomer, { customer }, { queue: 'api' });
    await baton.queues.setRateLimit('api', { limit: 5, periodMs: 3_600_000 });
    await baton.queues.setRateLimit('api', { limit: 2, periodMs: 60_000 }, { perKey: true });
    const worker = baton.worker({ tasks: [perCustomer], queues: ['api'], concurrency: 4 });
    let claimed = 0;
    const both = new Promise<void>((resolve) => worker.on('job:claimed', () => ++claimed === 2 && resolve()));
    await worker.start();
    await both;
    const { samples, types } = parse(await (await app.fetch(new Request('http://localhost/metrics'))).text());
    expect(types.get('baton_queue_rate_limit')).toBe('gauge');
    expect(samples.filter((x) => x.name === 'baton_queue_rate_limit')).toEqual([
      { name: 'baton_queue_rate_limit', labels: { queue: 'api', scope: 'queue' }, value: 5 },
      { name: 'baton_queue_rate_limit', labels: { queue: 'api', scope: 'key' }, value: 2 },
    ]);
    expect(value(samples, 'baton_queue_rate_used', { queue: 'api', scope: 'queue' })).toBe(2);
    expect(value(samples, 'baton_queue_rate_used', { queue: 'api', scope: 'key' })).toBe(1);
    expect(value(samples, 'baton_concurrency_key_jobs', { queue: 'api', key: 'a', state: 'running' })).toBe(1);
    expect(value(samples, 'baton_concurrency_key_jobs', { queue: 'api', key: 'a', state: 'queued' })).toBe(2);
    expect(value(samples, 'baton_concurrency_key_jobs', { queue: 'api', key: 'b', state: 'running' })).toBe(1);
    release();
    await worker.stop();
  });

  it('one scrape reads each thing once: the counts, and each queue setting, however many gauges show them', async () => {
    const ops: string[] = [];
    const baton = await openBaton({}, (op) => ops.push(op));
    const app = createHttpApp(baton);
    await baton.enqueue(ok, { n: 1 }, { queue: 'api' });
    await baton.queues.setConcurrency('api', 2);
    await baton.queues.setRateLimit('api', { limit: 5, periodMs: 60_000 });
    for (let scrape = 0; scrape < 2; scrape++) {
      ops.length = 0;
      const { samples } = parse(await (await app.fetch(new Request('http://localhost/metrics'))).text());
      expect(value(samples, 'baton_queue_concurrency_limit', { queue: 'api' })).toBe(2);
      expect(value(samples, 'baton_queue_rate_limit', { queue: 'api', scope: 'queue' })).toBe(5);
      expect(value(samples, 'baton_queue_jobs', { queue: 'api', state: 'queued' })).toBe(1);
      const calls = (op: string) => ops.filter((o) => o === op).length;
      // queues.list() reads the counts too: once for it, once for the two count gauges
      expect({ counts: calls('queueCounts'), limits: calls('queueListLimits'), rates: calls('queueListRateLimits'), paused: calls('queueListPaused') }, `scrape ${scrape}`)
        .toEqual({ counts: 2, limits: 1, rates: 1, paused: 1 });
    }
  });

  it('two apps in one process have their own registries', async () => {
    const baton = await openBaton();
    const a = createHttpApp(baton);
    const b = createHttpApp(baton);
    await baton.enqueue('x', {});
    for (const app of [a, b]) expect(value(parse(await (await app.fetch(new Request('http://localhost/metrics'))).text()).samples, 'baton_jobs_enqueued_total', {})).toBe(1);
  });

  it('steps by outcome (run, replayed, failed), step durations of run steps, waits by kind, orphaned steps', async () => {
    const baton = await openBaton();
    // Attempt 1 stores step "old" and fails; attempt 2 no longer has it: one orphan at completion.
    const app = createHttpApp(baton);
    const worker = baton.worker({ tasks: [orderTask, renamedTask], concurrency: 2 });
    await worker.start();
    const job = await waitingOrder(baton, worker); // run 1: charge run, flaky failed, then waits for a message
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    await baton.send(job.id, 'shipped', 'now');
    await done; // run 2: charge replayed, flaky failed again, the message taken (the receive, a step, runs)
    const orphans = waitForEvent(worker, 'job:steps-orphaned');
    await baton.enqueue(renamedTask, null);
    await orphans;

    const { samples, types } = parse(await (await app.fetch(new Request('http://localhost/metrics'))).text());
    expect(types.get('baton_job_steps_total')).toBe('counter');
    expect(types.get('baton_job_step_duration_seconds')).toBe('histogram');
    expect(value(samples, 'baton_job_steps_total', { task: 'order', outcome: 'run' })).toBe(2); // charge, the receive
    expect(value(samples, 'baton_job_steps_total', { task: 'order', outcome: 'replayed' })).toBe(1);
    expect(value(samples, 'baton_job_steps_total', { task: 'order', outcome: 'failed' })).toBe(2);
    expect(value(samples, 'baton_job_steps_total', { task: 'renamed', outcome: 'run' })).toBe(2);
    expect(value(samples, 'baton_job_step_duration_seconds_count', { task: 'order' })).toBe(2);
    expect(value(samples, 'baton_job_step_duration_seconds_count', { task: 'renamed' })).toBe(2);
    expect(value(samples, 'baton_job_waits_total', { task: 'order', kind: 'message' })).toBe(1);
    expect(value(samples, 'baton_job_waits_total', { kind: 'sleep' })).toBe(0);
    expect(value(samples, 'baton_job_steps_orphaned_total', { task: 'renamed' })).toBe(1);
  });
});
