import { join } from 'node:path';
import { bundleFixture } from '../lib/bundle.js';
import { spawnFixture, spawnScript } from '../lib/child.js';
import { processMemory } from '../lib/rss.js';
import { enqueueInBatches, openClient } from '../lib/seed.js';
import { perSecond, round } from '../lib/stats.js';
import type { Figure, Workload, WorkloadContext } from '../lib/workload.js';
import type { Baton } from 'baton-jobs';

/** Store time per operation as the worker's instrumented store observed it. */
type StoreOps = Record<string, { count: number; totalMs: number }>;

export interface DrainRun {
  concurrency: number;
  /** The worker's `prefetch` (jobs claimed ahead of a free slot); 0 = its default. */
  prefetch: number;
  ms: number;
  ops: StoreOps;
  storeMs: number;
  peakMB: number;
  readyMB: number;
  source: string;
  heapUsedMB: number;
}

/** How a drain's database is filled: `jobs` jobs for the worker to drain. */
export interface DrainSeed {
  /** Names the databases, the profile and the log lines, e.g. `drain` or `flow-keys`. */
  label: string;
  jobs: number;
  /** Fills the fresh database through a client (default: `jobs` no-op jobs of task `noop`). */
  fill?: (client: Baton) => Promise<void>;
}

/**
 * Seeds a fresh database with 20,000 no-op jobs (or what `seed` says), starts one
 * worker child at `concurrency` (and `prefetch`, default 0), and waits for its `drained` report (ms from just before
 * `worker.start()` to the last `job:completed`); reads its peak RSS before letting it exit.
 */
export async function drainOnce(ctx: WorkloadContext, concurrency: number, bundle?: string, seed?: DrainSeed, prefetch = 0): Promise<DrainRun> {
  const JOBS = seed?.jobs ?? ctx.sizes.drain;
  const label = `${seed?.label ?? 'drain'}-c${concurrency}${prefetch ? `-p${prefetch}` : ''}${bundle ? '-bundled' : ''}`;
  const url = await ctx.database(label);
  const client = await openClient(url);
  try {
    await (seed?.fill ? seed.fill(client) : enqueueInBatches(client, 'noop', JOBS, 1_000));
  } finally {
    await client.close();
  }
  const profile = ctx.profileDir && !bundle ? join(ctx.profileDir, `${label}.cpuprofile`) : undefined;
  const config = { database: url, worker: { concurrency, ...(prefetch ? { prefetch } : {}) }, expect: JOBS, ...(profile ? { profile } : {}) };
  const worker = bundle ? spawnScript(bundle, config, { name: `${label} worker` }) : spawnFixture('worker.ts', config, { name: `${label} worker` });
  const ready = await worker.waitForType('ready');
  const drained = await worker.waitForType('drained', undefined, 180_000);
  if (profile) await worker.waitForType('profiled');
  const memory = processMemory(worker.pid);
  await worker.close();
  const ops = drained.storeOps as StoreOps;
  const run: DrainRun = {
    concurrency,
    prefetch,
    ms: drained.ms as number,
    ops,
    storeMs: Object.values(ops).reduce((sum, op) => sum + op.totalMs, 0),
    peakMB: memory?.peakMB ?? (drained.peakRssMB as number),
    source: memory ? '/proc VmHWM' : 'process.resourceUsage().maxRSS',
    readyMB: ready.rssMB as number,
    heapUsedMB: drained.heapUsedMB as number,
  };
  ctx.log(`${label}: ${JOBS} jobs in ${round(run.ms, 0)} ms (store calls ${round(run.storeMs, 0)} ms); peak RSS ${round(run.peakMB, 0)} MB`);
  return run;
}

const storeDetail = (run: DrainRun) =>
  Object.fromEntries(Object.entries(run.ops).map(([op, v]) => [op, { count: v.count, totalMs: round(v.totalMs), meanMs: round(v.totalMs / v.count, 4) }]));

/** `concurrency 10`, or `concurrency 10, prefetch 10`. */
const workerLabel = (run: DrainRun) => `concurrency ${run.concurrency}${run.prefetch ? `, prefetch ${run.prefetch}` : ''}`;

const storeLine = (run: DrainRun) =>
  `drain ${workerLabel(run)}: store calls took ${round((100 * run.storeMs) / run.ms, 0)}% of the drain time (${Object.entries(run.ops)
    .sort((a, b) => b[1].totalMs - a[1].totalMs)
    .map(([op, v]) => `${op} ×${v.count} ${round(v.totalMs, 0)} ms`)
    .join(', ')})`;

/**
 * Workload 2 (and 6): one worker process drains 20,000 queued no-op jobs, at
 * concurrency 10 and 50 with default options, then with `prefetch` = concurrency (the
 * throughput option: as many jobs claimed ahead as run), each on a fresh database, under tsx like every bench
 * child. Throughput is measured in the worker from just before `worker.start()`
 * to the last `job:completed`. Workload 6 is the peak RSS (VmHWM from /proc) of
 * that process, and of the same drain at concurrency 10 with the worker bundled
 * to plain JavaScript (no tsx loader in the process, as deployed). With
 * `--profile` the tsx workers record a CPU profile of the drain window (the
 * `--cpu-prof` sampler, started and stopped through node:inspector).
 */
export const drain: Workload = {
  name: 'drain',
  title: 'drain throughput of one worker, and its peak RSS',
  async run(ctx) {
    const JOBS = ctx.sizes.drain;
    const figures: Figure[] = [];
    const settings: string[] = [
      'drain / RSS: default worker options except concurrency (and prefetch where named); "under tsx" = `node --conditions=baton-source --import tsx` (its esbuild loader is in the RSS), "bundled" = the same fixture bundled by esbuild, run by plain `node`',
    ];
    const runs: DrainRun[] = [];
    for (const concurrency of [10, 50]) runs.push(await drainOnce(ctx, concurrency));
    for (const concurrency of [10, 50]) runs.push(await drainOnce(ctx, concurrency, undefined, undefined, concurrency));
    let bundled: DrainRun | undefined;
    try {
      const bundle = await bundleFixture('worker.ts');
      ctx.onCleanup(bundle.remove);
      bundled = await drainOnce(ctx, 10, bundle.file);
    } catch (error) {
      settings.push(`bundled worker: not measured (${(error as Error).message.split('\n')[0]})`);
    }

    for (const run of runs) {
      figures.push({
        workload: '2. drain',
        name: `drain ${JOBS.toLocaleString('en')} no-op jobs, ${workerLabel(run)}`,
        value: perSecond(JOBS, run.ms),
        unit: 'jobs/s',
        target: run.prefetch ? undefined : run.concurrency === 10 ? ctx.driver.targets.drainC10 : ctx.driver.targets.drainC50,
        detail: { concurrency: run.concurrency, prefetch: run.prefetch, jobs: JOBS, ms: run.ms, storeMs: run.storeMs, storeShare: run.storeMs / run.ms, storeOps: storeDetail(run) },
      });
      settings.push(storeLine(run));
    }
    const rssRows: Array<[string, DrainRun]> = runs.map((run) => [`drain worker under tsx, ${workerLabel(run)}`, run]);
    if (bundled) rssRows.push(['drain worker bundled (plain node), concurrency 10', bundled]);
    for (const [name, run] of rssRows) {
      figures.push({
        workload: '6. peak RSS',
        name,
        value: run.peakMB,
        unit: 'MB',
        text: `${round(run.peakMB, 0)} MB (${round(run.readyMB, 0)} MB when idle)`,
        target: ctx.driver.targets.peakRss,
        detail: { source: run.source, rssAtReadyMB: run.readyMB, heapUsedAtEndMB: run.heapUsedMB, drainJobsPerSecond: perSecond(JOBS, run.ms) },
      });
    }
    return { figures, settings };
  },
};
