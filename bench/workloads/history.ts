import { loadavg } from 'node:os';
import type { Baton } from 'baton-jobs';
import { spawnFixture } from '../lib/child.js';
import { clearFinishedJobs, jobTableStorage, schemaUrl, serverActivity, withAdmin, type JobTableStorage, type ServerActivity } from '../lib/drivers.js';
import { enqueueInBatches, openClient } from '../lib/seed.js';
import { percentile, perSecond, round } from '../lib/stats.js';
import { createStockCluster } from '../lib/stock-cluster.js';
import type { Figure, Workload, WorkloadContext } from '../lib/workload.js';

/** One round: `jobs` enqueued (untimed), then drained by a fresh worker process. */
interface Round {
  round: number;
  /** Finished rows in the table when the round started. */
  historyBefore: number;
  jobsPerSecond: number;
  /** jobsPerSecond / round 1's. */
  ratio: number;
  /**
   * The median of the drain's ten tenths' rates (jobs/s): the rate the drain held for
   * most of the round. A burst of other load on this shared machine slows a tenth or
   * two of one round; a hot path that slows with history slows every tenth.
   */
  steadyJobsPerSecond: number;
  /** steadyJobsPerSecond / round 1's. */
  steadyRatio: number;
  /** The steady rate of this round's control drain: as many jobs, next to it in time, on a table without history. */
  controlSteadyJobsPerSecond: number;
  /**
   * This round's steady rate over its control's, as a share of the same quotient in
   * round 1: what history costs, with the machine's speed at the time divided out.
   */
  pairedRatio: number;
  /**
   * Mean ms of the worker's store calls: a claim that writes the completions waiting
   * for it (`jobCompleteAndClaim`, nearly every claim of a drain), a claim alone, a
   * completion alone.
   */
  cycleMeanMs: number;
  claimMeanMs: number;
  completeMeanMs: number;
  /** The worker's own VACUUMs during the round (`jobs:vacuumed`): the dead rows that triggered each, and its ms. */
  vacuums: Array<{ deadRows: number; ms: number }>;
  vacuumMs: number;
  /** The 1-minute load average at the round's end (the machine is shared: a busy round is slower). */
  load: number;
  /** After the round (the worker gone). */
  storage: JobTableStorage;
  /** What the server did during the drain besides Baton's statements (PostgreSQL; null on SQLite). */
  server: ServerActivity | null;
}

const MB = (bytes: number) => round(bytes / 1e6, 1);
const meanMs = (ops: Record<string, { count: number; totalMs: number }>, op: string) => (ops[op] ? ops[op].totalMs / ops[op].count : 0);

/** Enqueues `jobs` no-op jobs (not timed) and drains them with a fresh worker child; returns its reports. */
async function drainRound(client: Baton, url: string, jobs: number, name: string) {
  await enqueueInBatches(client, 'noop', jobs, 1_000);
  const serverBefore = await serverActivity(url);
  const worker = spawnFixture('worker.ts', { database: url, worker: { concurrency: 50 }, expect: jobs }, { name });
  const drained = await worker.waitForType('drained', undefined, Math.max(180_000, jobs * 5));
  const serverAfter = await serverActivity(url);
  await worker.close();
  return { drained, vacuums: worker.all('vacuumed'), serverBefore, serverAfter };
}

/**
 * Runs the rounds on the database at `url`: each enqueues `historyJobs` no-op jobs in
 * batches of 1,000 (not timed), then starts a fresh worker child (concurrency 50,
 * every other option at its default: retention, pruner, table vacuum) and waits for
 * its `drained` report (ms from just before `worker.start()` to the last completion).
 * `historyWarmUps` drains of as many jobs come first, not counted, and their finished
 * jobs are then removed (clearFinishedJobs): round 1 starts with no history on a live
 * table that has been through the drains' churn and the table vacuum, as a running
 * server's has. On a new table the first drains run faster than later ones, history or
 * none (rows appended in id order, a claim index not yet grown to its working size):
 * against them the figure would measure the table's first use, not history.
 *
 * Every round and warm-up is paired with a **control** drain of as many jobs on a second
 * database of the same server (`controlUrl`), whose finished jobs are removed after each
 * drain, so it never has history: run right before or right after the round (the order
 * alternates), it measures what the machine could do at that moment. This shared
 * machine's speed drifts by ±25% from one minute to the next (identical warm-up drains
 * ran at 5,635–10,243 jobs/s in one run); the quotient of a round and its control
 * divides that out and leaves what history costs.
 */
async function runRounds(ctx: WorkloadContext, label: string, url: string, controlUrl: string): Promise<Round[]> {
  const { historyRounds: rounds, historyJobs: jobs } = ctx.sizes;
  const client = await openClient(url);
  const control = await openClient(controlUrl);
  const done: Round[] = [];
  /** Drains a round on the history database and one on the control (whose finished jobs are then removed), in the order `n` picks. */
  const pair = async (n: number, name: string) => {
    const drainControl = async () => {
      const { drained } = await drainRound(control, controlUrl, jobs, `${name} control worker`);
      await clearFinishedJobs(controlUrl);
      return drained;
    };
    const controlFirst = n % 2 === 1;
    const before = controlFirst ? await drainControl() : undefined;
    const round = await drainRound(client, url, jobs, `${name} worker`);
    const after = controlFirst ? before! : await drainControl();
    return { ...round, control: after };
  };
  try {
    const warmUps: number[] = [];
    const controlWarmUps: number[] = [];
    for (let n = 1; n <= ctx.sizes.historyWarmUps; n++) {
      const { drained, control: c } = await pair(n, `history ${label} warm-up ${n}`);
      warmUps.push(Math.round(perSecond(jobs, drained.ms as number)));
      controlWarmUps.push(Math.round(perSecond(jobs, c.ms as number)));
    }
    await clearFinishedJobs(url);
    ctx.log(`history ${label} warm-up: ${warmUps.length} drains, not counted (jobs/s: ${warmUps.join(', ')}; their controls: ${controlWarmUps.join(', ')}); their finished jobs removed`);
    for (let n = 1; n <= rounds; n++) {
      const { drained, vacuums, serverBefore, serverAfter, control: c } = await pair(n, `history ${label} round ${n}`);
      const ops = drained.storeOps as Record<string, { count: number; totalMs: number }>;
      const jobsPerSecond = perSecond(jobs, drained.ms as number);
      const steadyJobsPerSecond = tenthsMedianRate(drained.splits as number[], jobs);
      const controlSteadyJobsPerSecond = tenthsMedianRate(c.splits as number[], jobs);
      const first = done[0];
      const r: Round = {
        round: n,
        historyBefore: (n - 1) * jobs,
        jobsPerSecond,
        ratio: jobsPerSecond / (first?.jobsPerSecond ?? jobsPerSecond),
        steadyJobsPerSecond,
        steadyRatio: steadyJobsPerSecond / (first?.steadyJobsPerSecond ?? steadyJobsPerSecond),
        controlSteadyJobsPerSecond,
        pairedRatio: first ? steadyJobsPerSecond / controlSteadyJobsPerSecond / (first.steadyJobsPerSecond / first.controlSteadyJobsPerSecond) : 1,
        cycleMeanMs: meanMs(ops, 'jobCompleteAndClaim'),
        claimMeanMs: meanMs(ops, 'jobClaim'),
        completeMeanMs: meanMs(ops, 'jobCompleteMany'),
        vacuums: vacuums.map((v) => ({ deadRows: v.deadRows as number, ms: round(v.durationMs as number, 0) })),
        vacuumMs: vacuums.reduce((sum, v) => sum + (v.durationMs as number), 0),
        load: round(loadavg()[0]!, 1),
        storage: await jobTableStorage(url),
        server: serverBefore && serverAfter && {
          checkpoints: serverAfter.checkpoints - serverBefore.checkpoints,
          walBytes: serverAfter.walBytes - serverBefore.walBytes,
          autovacuums: serverAfter.autovacuums - serverBefore.autovacuums,
          backendWrites: serverAfter.backendWrites - serverBefore.backendWrites,
          bufferAllocs: serverAfter.bufferAllocs - serverBefore.bufferAllocs,
        },
      };
      done.push(r);
      const dead = r.storage.deadRows === null ? '' : `, ${r.storage.deadRows.toLocaleString('en')} dead rows`;
      const server = r.server
        ? `; during the drain ${r.server.checkpoints} checkpoint(s), ${MB(r.server.walBytes)} MB WAL, ${r.server.autovacuums} autovacuum(s), ` +
          `${r.server.backendWrites.toLocaleString('en')} buffers written by backends of ${r.server.bufferAllocs.toLocaleString('en')} allocated`
        : '';
      ctx.log(
        `history ${label} round ${n}/${rounds}: ${Math.round(jobsPerSecond)} jobs/s (${round(100 * r.ratio, 0)}% of round 1), ` +
          `steady ${Math.round(steadyJobsPerSecond)} jobs/s (${round(100 * r.steadyRatio, 0)}%), control ${Math.round(controlSteadyJobsPerSecond)} jobs/s, ` +
          `paired ${round(100 * r.pairedRatio, 0)}% of round 1, complete-and-claim ${round(r.cycleMeanMs, 2)} ms, ` +
          `${r.vacuums.length} vacuum(s) ${Math.round(r.vacuumMs)} ms${dead}, claim index ${MB(r.storage.indexBytes.jobs_claim ?? 0)} MB, table ${MB(r.storage.tableBytes)} MB${server}; load ${r.load}`,
      );
    }
  } finally {
    await client.close();
    await control.close();
  }
  return done;
}

/**
 * The median rate (jobs/s) of a drain's ten tenths, from the ms since its start at which
 * each tenth of `jobs` had completed (the worker fixture's `splits`).
 */
function tenthsMedianRate(splits: number[], jobs: number): number {
  const rates = splits.map((ms, i) => perSecond(jobs / 10, ms - (i === 0 ? 0 : splits[i - 1]!)));
  return percentile(rates, 50);
}

/** Rounds per block of the history figure. */
const BLOCK = 5;

/**
 * The rounds in blocks of {@link BLOCK}, each with the mean of its rounds' paired shares
 * (a round against its control drain). Two identical drains a minute apart on this VM
 * differ by up to ±20% (the warm-up pairs), so the slowest single round of 50 measures
 * that spread, not history; a block's mean has a fifth of its variance, and a slowdown
 * that grows with history still shows in the later blocks.
 */
function pairedBlocks(rounds: Round[]): Array<{ from: number; to: number; mean: number }> {
  const blocks = [];
  for (let i = 0; i < rounds.length; i += BLOCK) {
    const block = rounds.slice(i, i + BLOCK);
    blocks.push({ from: block[0]!.round, to: block[block.length - 1]!.round, mean: block.reduce((sum, r) => sum + r.pairedRatio, 0) / block.length });
  }
  return blocks;
}

/**
 * The figures of one run of rounds: the worst round's steady rate as a share of round 1's
 * (the target), the worst whole-round rate likewise, and the sizes at the end.
 */
function historyFigures(ctx: WorkloadContext, label: string, rounds: Round[]): Figure[] {
  const worst = rounds.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  const worstSteady = rounds.reduce((a, b) => (b.steadyRatio < a.steadyRatio ? b : a));
  const worstPaired = rounds.reduce((a, b) => (b.pairedRatio < a.pairedRatio ? b : a));
  const last = rounds[rounds.length - 1]!;
  const jobs = rounds.length * ctx.sizes.historyJobs;
  const indexes = Object.entries(last.storage.indexBytes).map(([name, bytes]) => `${name} ${MB(bytes)}`);
  const first = rounds[0]!;
  const blocks = pairedBlocks(rounds);
  const worstBlock = blocks.reduce((a, b) => (b.mean < a.mean ? b : a));
  return [
    {
      workload: '9. history',
      name: `${label}: slowest ${BLOCK}-round block against its control drains (mean of the rounds' paired shares), vs the first block`,
      value: (100 * worstBlock.mean) / blocks[0]!.mean,
      unit: '%',
      text: `${round((100 * worstBlock.mean) / blocks[0]!.mean, 0)}% (rounds ${worstBlock.from}–${worstBlock.to}; blocks: ${blocks.map((b) => `${round((100 * b.mean) / blocks[0]!.mean, 0)}%`).join(', ')})`,
      target: ctx.driver.targets.historyWorstRound,
      detail: { rounds, blocks },
    },
    {
      workload: '9. history',
      name: `${label}: slowest round of ${rounds.length} × ${ctx.sizes.historyJobs.toLocaleString('en')} jobs against its control drain (steady rates), vs round 1`,
      value: 100 * worstPaired.pairedRatio,
      unit: '%',
      text: `${round(100 * worstPaired.pairedRatio, 0)}% (round ${worstPaired.round}: ${Math.round(worstPaired.steadyJobsPerSecond)} jobs/s, its control ${Math.round(worstPaired.controlSteadyJobsPerSecond)}; ` +
        `round 1: ${Math.round(first.steadyJobsPerSecond)}, its control ${Math.round(first.controlSteadyJobsPerSecond)})`,
    },
    {
      workload: '9. history',
      name: `${label}: slowest steady rate (median of a round's tenths) of ${rounds.length} rounds, vs round 1 (no control)`,
      value: 100 * worstSteady.steadyRatio,
      unit: '%',
      text: `${round(100 * worstSteady.steadyRatio, 0)}% (round ${worstSteady.round}: ${Math.round(worstSteady.steadyJobsPerSecond)} vs ${Math.round(first.steadyJobsPerSecond)} jobs/s)`,
    },
    {
      workload: '9. history',
      name: `${label}: slowest whole-round rate of ${rounds.length} rounds, vs round 1`,
      value: 100 * worst.ratio,
      unit: '%',
      text: `${round(100 * worst.ratio, 0)}% (round ${worst.round}: ${Math.round(worst.jobsPerSecond)} vs ${Math.round(first.jobsPerSecond)} jobs/s)`,
    },
    {
      workload: '9. history',
      name: `${label}: sizes after ${jobs.toLocaleString('en')} jobs (MB)`,
      value: MB(last.storage.totalBytes),
      unit: 'MB',
      text: `all ${MB(last.storage.totalBytes)}, jobs table ${MB(last.storage.tableBytes)}; ${indexes.join(', ')}${last.storage.deadRows === null ? '' : `; ${last.storage.deadRows.toLocaleString('en')} dead rows`}`,
      detail: { ...last.storage },
    },
  ];
}

/**
 * Which PostgreSQL servers the history rounds run on, from `BATON_BENCH_HISTORY_SERVERS`:
 * `as-is` (the server the bench was given), `stock` (the throwaway stock-settings
 * cluster) or unset for both; the two halves of a full run take ~20 min each here.
 * @throws Error naming the variable for any other value
 */
function historyServers(): { asIs: boolean; stock: boolean } {
  const value = process.env.BATON_BENCH_HISTORY_SERVERS;
  if (value === undefined || value === '') return { asIs: true, stock: true };
  if (value === 'as-is' || value === 'stock') return { asIs: value === 'as-is', stock: value === 'stock' };
  throw new Error(`BATON_BENCH_HISTORY_SERVERS must be "as-is" or "stock" (unset: both), not ${JSON.stringify(value)}`);
}

/**
 * Workload 7 (opt-in; ~40 min a server at full size here, control drains included): rounds of 100,000 no-op jobs
 * (`BATON_BENCH_HISTORY_ROUNDS`, default 50) drained one after another on one
 * database, so finished history grows by 100,000 rows a round while the default
 * retention (1 day) removes none of it: the hot path must not slow down with history.
 * Reports the slowest block of 5 rounds, each round against its control drain (runRounds),
 * as a share of the first block (target ≥ 90%; pairedBlocks), the slowest single round so
 * paired and without the control, and the table's and
 * indexes' sizes at the end; every round's rate, claim time, vacuums, dead rows and
 * sizes go to the results file. On PostgreSQL it runs twice: on the server as it is
 * (here autovacuum is off) and on a throwaway cluster with stock settings
 * (autovacuum on), created and dropped by the workload (`BATON_BENCH_HISTORY_SERVERS`
 * picks one).
 */
export const history: Workload = {
  name: 'history',
  title: 'drain rate per round as finished history grows (default retention)',
  optIn: true,
  async run(ctx) {
    const figures: Figure[] = [];
    const settings = [
      `history: per round ${ctx.sizes.historyJobs.toLocaleString('en')} no-op jobs enqueued in batches of 1,000 (not timed), then drained by a fresh worker process at concurrency 50 with default options (retention, pruner, table vacuum); per-round figures in the results file`,
    ];
    settings.push(`history: each round and warm-up is paired with a control drain of as many jobs on a second database of the same server whose finished jobs are removed after each drain (before the round in odd rounds, after it in even ones); a round's paired share is its steady rate over its control's, against round 1's, and the target applies to the mean share of each block of ${BLOCK} rounds against the first block's`);
    settings.push(`history: ${ctx.sizes.historyWarmUps} warm-up drains of as many jobs first, not counted, their finished jobs then removed: round 1 starts with no history on a table already through the drains' churn (a new table's first drains are faster than later ones, history or none)`);
    const servers = historyServers();
    if (ctx.driver.name !== 'postgres' || servers.asIs) {
      const url = await ctx.database('history');
      const label = ctx.driver.name === 'postgres' ? 'server as it is' : 'sqlite';
      figures.push(...historyFigures(ctx, label, await runRounds(ctx, label, url, await ctx.database('history-control'))));
    }
    if (ctx.driver.name === 'postgres' && servers.stock) {
      const autovacuum = await withAdmin(async (c) => (await c.query<{ on: string }>(`SELECT current_setting('autovacuum') AS on`)).rows[0]!.on);
      settings.push(`history "server as it is": autovacuum = ${autovacuum}; "stock cluster": a throwaway cluster with the server's default settings (autovacuum on)`);
      const stock = await createStockCluster().catch((error: Error) => void settings.push(`history on a stock cluster: not run (${error.message.split('\n')[0]})`));
      if (stock) {
        ctx.onCleanup(stock.drop);
        figures.push(...historyFigures(ctx, 'stock cluster', await runRounds(ctx, 'stock cluster', schemaUrl(stock.url, 'bench_history'), schemaUrl(stock.url, 'bench_history_control'))));
      }
    }
    return { figures, settings };
  },
};
