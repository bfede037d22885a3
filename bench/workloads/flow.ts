import { defineTask, type Baton } from 'baton-jobs';
import { openClient } from '../lib/seed.js';
import { percentile, perSecond, round, summarize } from '../lib/stats.js';
import type { Figure, Target, Workload, WorkloadContext } from '../lib/workload.js';
import { drainOnce, type DrainRun, type DrainSeed } from './drain.js';

/** The issue's target for a limited drain: at least 70% of the unlimited drain's jobs/s. */
const RATIO_TARGET: Target = { op: '>=', value: 70, text: '≥ 70% of unlimited' };
/** Worker slots of every drain here: a queue limit of 50 must be what bounds the limited one. */
const CONCURRENCY = 50;

/** The bench's `noop` with a per-key limit of 1: jobs enqueued with it and a `concurrencyKey` carry limit 1. */
const keyedNoop = defineTask('noop', { concurrency: { limit: 1 }, handler: async () => null });

/** Enqueues `jobs` keyed no-op jobs over `keys` keys (key of job i: `k<i mod keys>`), in batches of 1,000. */
async function enqueueKeyed(client: Baton, jobs: number, keys: number): Promise<void> {
  for (let from = 0; from < jobs; from += 1_000) {
    const items = [];
    for (let i = from; i < Math.min(jobs, from + 1_000); i++) items.push({ task: keyedNoop, payload: { i }, options: { concurrencyKey: `k${i % keys}` } });
    await client.enqueueMany(items);
  }
}

/**
 * Claim latency with a keyed backlog: `jobs` queued over `keys` keys at limit 1; one
 * claim of 10 at a time through the store (what a worker's fetch does), each batch
 * completed before the next claim (untimed), so every claim walks a busy key table.
 * @returns each claim's time, ms
 */
async function claimLatency(ctx: WorkloadContext, jobs: number, keys: number, claims: number): Promise<number[]> {
  const client = await openClient(await ctx.database('flow-claims'));
  try {
    await enqueueKeyed(client, jobs, keys);
    const samples: number[] = [];
    for (let n = 0; n < claims; n++) {
      const started = performance.now();
      const claimed = await client.store.jobClaim({ workerId: 'bench', tasks: ['noop'], queues: ['default'], limit: 10, leaseMs: 60_000, now: client.clock.now() });
      samples.push(performance.now() - started);
      await client.store.jobCompleteMany({ items: claimed.map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })), now: client.clock.now() });
    }
    return samples;
  } finally {
    await client.close();
  }
}

/**
 * Workload 9 (issue 12): flow control's cost. Three drains of `flowDrain` no-op jobs by
 * one worker at concurrency 50, each on a fresh database: unlimited; with `flowKeys`
 * distinct concurrency keys at limit 1 (two jobs per key); and with a queue limit of 50 —
 * `flowRounds` rounds of the three, interleaved. Each limited drain's figure is the median
 * of its rounds' shares of the unlimited drain of the same round. Then
 * the claim latency (p50/p99) with `flowClaimJobs` queued jobs over `flowKeys` keys.
 */
export const flow: Workload = {
  name: 'flow',
  title: 'flow control: drains with 10,000 concurrency keys and with a queue limit, against the unlimited drain; keyed claim latency',
  async run(ctx) {
    const { flowDrain: JOBS, flowKeys: KEYS, flowClaimJobs, flowClaims } = ctx.sizes;
    const seeds: Array<{ name: string; seed: DrainSeed }> = [
      { name: 'unlimited', seed: { label: 'flow-unlimited', jobs: JOBS } },
      { name: `${KEYS.toLocaleString('en')} keys at limit 1`, seed: { label: 'flow-keys', jobs: JOBS, fill: (client) => enqueueKeyed(client, JOBS, KEYS) } },
      {
        name: 'queue limit 50',
        seed: {
          label: 'flow-limit',
          jobs: JOBS,
          fill: async (client) => {
            for (let from = 0; from < JOBS; from += 1_000) await client.enqueueMany(Array.from({ length: Math.min(1_000, JOBS - from) }, (_, i) => ({ task: 'noop', payload: { i: from + i } })));
            await client.queues.setConcurrency('default', 50, { force: true });
          },
        },
      },
    ];
    // Rounds interleave the three drains, and each share is the median of the rounds'
    // own shares (a limited drain against the unlimited one of its round, minutes apart
    // at most): drains of one size on this 2-core machine vary by up to a third from one
    // minute to the next, which a share of medians taken over the whole run mixes in.
    const rates: number[][] = seeds.map(() => []);
    const runs: DrainRun[][] = seeds.map(() => []);
    for (let round = 0; round < ctx.sizes.flowRounds; round++) {
      for (const [i, { seed }] of seeds.entries()) {
        const run = await drainOnce(ctx, CONCURRENCY, undefined, seed);
        runs[i]!.push(run);
        rates[i]!.push(perSecond(JOBS, run.ms));
      }
    }
    const figures: Figure[] = seeds.map(({ name }, i) => {
      const rate = percentile(rates[i]!, 50);
      const each = rates[i]!.map((r) => round(r, 0)).join(', ');
      const shares = rates[i]!.map((r, n) => (100 * r) / rates[0]![n]!);
      const share = percentile(shares, 50);
      return {
        workload: '9. flow control',
        name: `drain ${JOBS.toLocaleString('en')} jobs, concurrency ${CONCURRENCY}, ${name}`,
        value: i === 0 ? rate : share,
        unit: i === 0 ? 'jobs/s' : '% of unlimited',
        text: i === 0
          ? `median ${round(rate, 0)} jobs/s of ${rates[i]!.length} drains (${each})`
          : `${round(share, 0)}% of unlimited (median of the rounds' shares: ${shares.map((x) => `${round(x, 0)}%`).join(', ')}); median ${round(rate, 0)} jobs/s (${each})`,
        ...(i === 0 ? {} : { target: RATIO_TARGET }),
        detail: { jobs: JOBS, rates: rates[i], runs: runs[i]!.map((run) => ({ ms: run.ms, storeMs: run.storeMs, storeOps: run.ops })) },
      };
    });
    const claims = summarize(await claimLatency(ctx, flowClaimJobs, KEYS, flowClaims));
    figures.push({
      workload: '9. flow control',
      name: `claim of 10 with ${flowClaimJobs.toLocaleString('en')} jobs queued over ${KEYS.toLocaleString('en')} keys at limit 1`,
      value: claims.p99,
      unit: 'ms',
      text: `p50 ${round(claims.p50)} / p99 ${round(claims.p99)} / max ${round(claims.max)} ms`,
      detail: { ...claims },
    });
    return {
      figures,
      settings: [`flow: one worker at concurrency ${CONCURRENCY}, default options; claims measured through the store from the bench process, ${flowClaims} claims, each batch completed before the next`],
    };
  },
};
