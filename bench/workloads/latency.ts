import { spawnFixture, type Child } from '../lib/child.js';
import { round, summarize, type Summary } from '../lib/stats.js';
import type { Figure, Workload } from '../lib/workload.js';

/** Mean enqueue rate of the latency measurements, jobs/s. */
export const RATE = 50;
const CONCURRENCY = 10;

const ms = (v: number) => `${round(v, 2)}`;

/**
 * Workload 3: enqueue-to-start latency at 50 jobs/s (Poisson arrivals), 300 measured jobs after 20
 * warm-up ones. (a) enqueuer and worker in one process: from just before
 * `enqueue()` to the handler's first line. (b) enqueuer in another process: it
 * puts its wall-clock send time in the payload, the worker's handler subtracts it
 * from its start time (one host, one clock).
 */
export const latency: Workload = {
  name: 'latency',
  title: 'enqueue-to-start latency, same process and cross-process',
  async run(ctx) {
    const { latencyCount: COUNT, latencyWarmup: WARMUP } = ctx.sizes;
    const figures: Figure[] = [];

    const local = spawnFixture('same-process.ts', {
      database: await ctx.database('latency-local'),
      count: COUNT,
      warmup: WARMUP,
      rate: RATE,
      worker: { concurrency: CONCURRENCY },
    }, { name: 'same-process latency' });
    const samples = (await local.waitForType('samples', undefined, 120_000)).ms as number[];
    await local.close();
    const a = summarize(samples);
    ctx.log(`same-process latency: p50 ${ms(a.p50)} ms, p99 ${ms(a.p99)} ms`);
    figures.push(latencyFigure(`same process, ${COUNT} jobs at ${RATE}/s`, a, ctx.driver.targets.latencySameProcess));

    const url = await ctx.database('latency-remote');
    const worker = spawnFixture('worker.ts', { database: url, worker: { concurrency: CONCURRENCY } }, { name: 'latency worker' });
    await worker.waitForType('ready');
    const b = await otherProcessLatency(url, worker, COUNT, WARMUP);
    await worker.close();
    ctx.log(`cross-process latency: p50 ${ms(b.p50)} ms, p99 ${ms(b.p99)} ms`);
    figures.push(latencyFigure(`other process, ${COUNT} jobs at ${RATE}/s`, b, ctx.driver.targets.latencyOtherProcess));

    return {
      figures,
      settings: [
        `start latency: Poisson arrivals at a mean of ${RATE}/s (seeded), ${WARMUP} warm-up jobs left out; worker concurrency ${CONCURRENCY}, default options (pollInterval 1000 ms); ${ctx.driver.wakeUps}`,
      ],
    };
  },
};

/**
 * Enqueue-to-start latency from another process: a client child enqueues
 * `warmup + count` `latency` jobs into `url`, Poisson arrivals at a mean of
 * {@link RATE}/s, each with its wall-clock send time in the payload; `worker` (a
 * running worker.ts child that serves them) reports each start. Closes the client.
 * @returns the summary of the `count` measured starts (ms), warm-up jobs left out
 */
export async function otherProcessLatency(url: string, worker: Child, count: number, warmup: number): Promise<Summary> {
  const client = spawnFixture('client.ts', { database: url }, { name: 'latency enqueuer' });
  await client.waitForType('ready');
  const before = worker.all('latency').length;
  client.send({ op: 'enqueue-paced', ref: 'paced', task: 'latency', count: count + warmup, rate: RATE });
  const reports = (await worker.waitForCount('latency', before + count + warmup, 120_000)).slice(before);
  await client.waitForType('paced');
  await client.close();
  return summarize(reports.filter((r) => (r.i as number) >= warmup).map((r) => r.ms as number));
}

/** The table row of one latency measurement: p99 is the figure, p50 and max beside it. */
export function latencyFigure(name: string, summary: Summary, target: Figure['target'], workload = '3. start latency'): Figure {
  return {
    workload,
    name,
    value: summary.p99,
    unit: 'ms',
    text: `p50 ${ms(summary.p50)} / p99 ${ms(summary.p99)} ms (max ${ms(summary.max)})`,
    target,
    detail: { ...summary },
  };
}
