import { bulkSeed } from '../lib/bulk-seed.js';
import { spawnFixture } from '../lib/child.js';
import { perSecond, round, type Summary } from '../lib/stats.js';
import type { Figure, Workload, WorkloadContext } from '../lib/workload.js';
import { otherProcessLatency, RATE } from './latency.js';

const CONCURRENCY = 10;
const HOUR = 3_600_000;
/** How long a drain may take before it is reported as not finished (rate 0). */
const DRAIN_BOUND_MS = 600_000;

/** Where the jobs that are not due sit: another queue (due, but not served), or the served queue an hour ahead. */
type Kind = 'queued' | 'delayed';
const KIND_TEXT: Record<Kind, string> = { queued: 'queued in a queue the worker does not serve', delayed: 'delayed an hour in the served queue' };

interface CaseResult {
  backlog: number;
  seedMs: number;
  drainMs: number;
  latency: Summary;
}

/**
 * One case on a fresh database: `backlog` jobs that the worker must not take
 * (bulk-seeded); a worker child (concurrency 10) reports the start of each job
 * another process enqueues at 50/s; then `backlogDrain` due no-op jobs are seeded
 * and a new worker child (concurrency 10) drains them (worker start to the last
 * completion).
 * The "queued" backlog's run time is a minute before the due jobs', so an index
 * ordered by run time without the queue first would meet all of it before them.
 */
async function backlogCase(ctx: WorkloadContext, kind: Kind, backlog: number): Promise<CaseResult> {
  const { backlogDrain: DRAIN, latencyCount: COUNT, latencyWarmup: WARMUP } = ctx.sizes;
  const url = await ctx.database(`backlog-${kind}-${backlog}`);
  const now = Date.now();
  const seedMs = await bulkSeed(url, kind === 'queued' ? { count: backlog, task: 'noop', queue: 'elsewhere', runAt: now - 60_000 } : { count: backlog, task: 'noop', runAt: now + HOUR });
  const name = `backlog ${kind} ${backlog}`;
  // Start latency first, on the table as seeded: after a drain its claim index would
  // also hold the drained jobs' dead entries (until a vacuum), which is not what this measures.
  const idle = spawnFixture('worker.ts', { database: url, worker: { concurrency: CONCURRENCY } }, { name: `${name} latency worker` });
  await idle.waitForType('ready');
  const latency = await otherProcessLatency(url, idle, COUNT, WARMUP);
  await idle.close();
  await bulkSeed(url, { count: DRAIN, task: 'noop', runAt: Date.now() - 1_000 });
  const worker = spawnFixture('worker.ts', { database: url, worker: { concurrency: CONCURRENCY }, expect: DRAIN }, { name: `${name} drain worker` });
  await worker.waitForType('ready');
  // A claim that reads the whole backlog each time may take hours: give up after DRAIN_BOUND_MS (rate 0).
  const drained = await worker.waitForType('drained', undefined, DRAIN_BOUND_MS).catch((error: Error) => {
    ctx.log(`${name}: ${error.message.split('\n')[0]}`);
    return { ms: Number.POSITIVE_INFINITY };
  });
  await worker.close();
  const result = { backlog, seedMs, drainMs: drained.ms as number, latency };
  ctx.log(
    `backlog ${kind} ${backlog.toLocaleString('en')} (seeded in ${round(seedMs / 1000, 1)} s): drain ${round(perSecond(DRAIN, result.drainMs), 0)} jobs/s; start latency p50 ${round(latency.p50)} / p99 ${round(latency.p99)} ms`,
  );
  return result;
}

/**
 * Workload 7 (opt-in): does a large backlog of jobs that are not due slow the claim?
 * For each kind of backlog (queued in another queue; delayed an hour in the served
 * queue), a baseline with `backlogSmall` (10,000) such jobs and the case with
 * `backlogLarge` (1,000,000), each on a fresh database seeded by one INSERT … SELECT
 * (lib/bulk-seed.ts): the drain rate of 20,000 due jobs and the enqueue→start p99 at
 * 50/s from another process. Figures: the large case as a share of the baseline
 * (target ≥ 90%).
 */
export const backlog: Workload = {
  name: 'backlog',
  title: 'drain rate and start latency beside 1M queued or delayed jobs, vs 10k',
  optIn: true,
  async run(ctx) {
    const { backlogSmall: SMALL, backlogLarge: LARGE, backlogDrain: DRAIN, latencyCount: COUNT } = ctx.sizes;
    const figures: Figure[] = [];
    const n = (v: number) => v.toLocaleString('en');
    for (const kind of ['queued', 'delayed'] as const) {
      const small = await backlogCase(ctx, kind, SMALL);
      const large = await backlogCase(ctx, kind, LARGE);
      const rateSmall = perSecond(DRAIN, small.drainMs);
      const rateLarge = perSecond(DRAIN, large.drainMs);
      figures.push({
        workload: '7. backlog',
        name: `drain ${n(DRAIN)} due jobs beside ${n(LARGE)} ${KIND_TEXT[kind]}, share of the rate beside ${n(SMALL)}`,
        value: (100 * rateLarge) / rateSmall,
        unit: '%',
        text: `${round((100 * rateLarge) / rateSmall, 0)}% (${n(Math.round(rateLarge))} vs ${n(Math.round(rateSmall))} jobs/s)`,
        target: { op: '>=', value: 90, text: '≥ 90%' },
        detail: { small, large, rateSmall, rateLarge },
      });
      // The large case's start p99 must be within 1/0.9 of the baseline's: starts at least 90% as fast.
      const bound = small.latency.p99 / 0.9;
      figures.push({
        workload: '7. backlog',
        name: `enqueue→start p99, ${COUNT} jobs at ${RATE}/s from another process, beside ${n(LARGE)} ${kind} vs ${n(SMALL)}`,
        value: large.latency.p99,
        unit: 'ms',
        text: `p99 ${round(large.latency.p99)} vs ${round(small.latency.p99)} ms (p50 ${round(large.latency.p50)} vs ${round(small.latency.p50)})`,
        target: { op: '<', value: bound, text: `≤ baseline p99 / 0.9 (${round(bound)} ms)` },
        detail: { small: small.latency, large: large.latency },
      });
    }
    return {
      figures,
      settings: [
        `backlog: jobs not due bulk-seeded by one INSERT … SELECT (the rows enqueue writes; PostgreSQL ANALYZEd after, as autovacuum would); "queued" = due a minute before the drained jobs but in queue "elsewhere"; "delayed" = in the served queue, run time an hour ahead; worker children at concurrency ${CONCURRENCY}, default options: one measures start latency as workload 3 does (first, on the table as seeded), then another drains the due jobs (worker start to the last completion)`,
      ],
    };
  },
};
