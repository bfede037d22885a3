/**
 * `npm run bench:compare [-- --reps N] [--only W1,W2,…] [--systems NAME,…] [--tiny]`
 * `npm run bench:compare -- --durable [--reps N] [--only S1,S2,…] [--systems NAME,…] [--tiny]`
 *
 * Baton (SQLite and PostgreSQL drivers) side by side with graphile-worker,
 * pg-boss (PostgreSQL) and BullMQ (Redis) on workloads W1–W7 of issue 4, each the
 * same for every system. Repetitions are interleaved (baton sqlite, baton
 * postgres, graphile-worker, pg-boss, bullmq, baton sqlite, …). Prints one markdown
 * table of medians (min–max) with the ratio Baton / best peer per row, the options
 * each system ran with, and writes every sample to bench/compare/results/<stamp>.json.
 *
 * Checks first that PostgreSQL (BATON_BENCH_DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/test) and Redis (127.0.0.1:6379) answer; a
 * system whose server does not is reported and left out (exit code 1). Each run
 * gets fresh storage (SQLite file, PostgreSQL schema `cmp_*` / `bench_*`, Redis
 * prefix `cmp-*`), removed afterwards, and the run ends by checking that nothing
 * is left. `--tiny` runs every workload on a few jobs (checks the harness; its
 * figures mean nothing).
 *
 * FLOOR (bench/floor) measures each Baton driver's storage floor, the lean
 * claim/complete cycle with no job system, in the same run; it runs whenever W2 does,
 * and a column per Baton driver prints each W2 drain's share of that floor (median
 * drain ÷ median floor; PostgreSQL: the one-connection floor at the drain's batch, and
 * the best variant). W3 brings its own floor along (bench/floor/start.ts): enqueue commit
 * + wake-up + claim commit with no job system, paced as W3, and the enqueue's commit
 * alone (on PostgreSQL its WAL flush: the fsync floor), per Baton driver.
 *
 * `--durable` runs the durable-execution section instead (issue 32, item 7): S1–S7
 * on Baton (SQLite and PostgreSQL) beside DBOS Transact (lib/durable.ts), the same
 * table, ratios and results file.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { killAllChildren, killAllChildrenNow } from '../lib/child.js';
import { dropLeftoverSchemas } from '../lib/drivers.js';
import { writeResults } from '../lib/results.js';
import { formatNumber, markdownTable } from '../lib/table.js';
import { DURABLE_FULL, DURABLE_STEPS, DURABLE_TINY, durableRows, durableSystems, type DurableCtx, type DurableSystem, type Row } from './lib/durable.js';
import { allSystems, checkBuilt, checkRedis, dropLeftovers, leftovers, REDIS, type Namespace, type System } from './lib/systems.js';
import { floorRows, floorShares } from './lib/floor-table.js';
import { floor, FULL, TINY, w1, w2, w3, w4, w5, w6, w3Floor, w6short, w7, type Cell, type Ctx, type RunResult, type Sizes } from './lib/workloads.js';

/** What the runner needs of a system, in either section. */
type AnySystem = System | DurableSystem;

interface Step {
  workload: string;
  title: string;
  run: (system: AnySystem, ctx: Ctx & DurableCtx) => Promise<RunResult>;
  /** Run every system at once within a repetition (waits dominated by leases / schedules, not CPU). */
  parallel?: boolean;
}

const QUEUE_STEPS = ([
  { workload: 'W1', title: 'bulk enqueue', run: w1 },
  { workload: 'FLOOR', title: "storage floor of Baton's drivers (no job system)", run: floor },
  { workload: 'W2', title: 'drain + peak RSS + start-up', run: w2 },
  { workload: 'W3', title: 'enqueue-to-start latency', run: w3 },
  { workload: 'W3', title: "start floor of Baton's drivers (no job system)", run: w3Floor },
  { workload: 'W4', title: 'cancel from another process', run: w4 },
  { workload: 'W5', title: 'SIGTERM hand-off', run: w5 },
  { workload: 'W6', title: 'SIGKILL, default settings', run: w6, parallel: true },
  { workload: 'W6', title: 'SIGKILL, shortest lease', run: w6short, parallel: true },
  { workload: 'W7', title: 'recurring job in three processes', run: w7, parallel: true },
] as Array<{ workload: string; title: string; run: (system: System, ctx: Ctx) => Promise<RunResult>; parallel?: boolean }>) as unknown as Step[];

const USAGE = 'usage: npm run bench:compare -- [--durable] [--reps N] [--only W1,W2,… | S1,S2,…] [--systems "baton sqlite",bullmq,dbos,…] [--tiny]';
const durable = process.argv.includes('--durable');
const STEPS: Step[] = durable ? (DURABLE_STEPS as unknown as Step[]) : QUEUE_STEPS;

function parseArgs(argv: string[]) {
  let reps = 3;
  let only = new Set<string>();
  let systems: Set<string> | undefined;
  let tiny = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const value = () => (eq > 0 ? arg.slice(eq + 1) : (argv[++i] ?? fail(`${flag} needs a value`)));
    if (flag === '--reps') reps = Number(value());
    else if (flag === '--only') only = new Set(value().toUpperCase().split(',').map((s) => s.trim()));
    else if (flag === '--systems') systems = new Set(value().split(',').map((s) => s.trim()));
    else if (flag === '--tiny') tiny = true;
    else if (flag === '--durable') continue;
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(`${USAGE}\n${STEPS.map((s) => `  ${s.workload}  ${s.title}`).join('\n')}\n`);
      process.exit(0);
    } else fail(`unknown argument ${arg}`);
  }
  if (!Number.isInteger(reps) || reps < 1) fail('--reps must be a positive integer');
  for (const w of only) if (!STEPS.some((s) => s.workload === w)) fail(`unknown workload ${w}`);
  if (only.has('W2') && !durable) only.add('FLOOR'); // the drains' share of floor is measured in the same run
  return { reps, only, systems, tiny };
}

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}


function rows(s: Sizes): Row[] {
  const n = (x: number) => x.toLocaleString('en');
  const long = `${(s.longJob.stepMs * s.longJob.steps) / 1000} s job`;
  return [
    { key: 'w1', workload: 'W1', label: `bulk enqueue ${n(s.bulk)} no-op jobs, batches of ${n(s.batch)}`, unit: 'jobs/s', better: 'higher' },
    ...floorRows(s.drain),
    ...s.concurrencies.map((c): Row => ({ key: `w2-c${c}`, workload: 'W2', label: `drain ${n(s.drain)} jobs, 1 worker, concurrency ${c}`, unit: 'jobs/s', better: 'higher', concurrency: c })),
    ...(['p50', 'p95', 'p99', 'max'] as const).map((p): Row => ({ key: `w3-${p}`, workload: 'W3', label: `enqueue→start ${p}, ${n(s.latencyCount)} jobs at ${s.rate}/s from another process`, unit: 'ms', better: 'lower' })),
    ...(['p50', 'p99', 'max'] as const).map((p): Row => ({ key: `w3-floor-${p}`, workload: 'W3', label: `start floor ${p}, no job system: enqueue commit + wake-up + claim commit`, unit: 'ms', better: 'lower' })),
    ...(['p50', 'p99', 'max'] as const).map((p): Row => ({ key: `w3-fsync-${p}`, workload: 'W3', label: `the enqueue's commit alone ${p} (PostgreSQL: its WAL flush, the fsync floor)`, unit: 'ms', better: 'lower' })),
    ...(['p50', 'p95', 'p99'] as const).map((p): Row => ({ key: `w4-${p}`, workload: 'W4', label: `cancel → handler signal ${p}, ${s.cancelTrials} trials`, unit: 'ms', better: 'lower' })),
    { key: 'w5-ms', workload: 'W5', label: `SIGTERM (${long}) → runs again on the idle worker`, unit: 's', better: 'lower', scale: 1000 },
    { key: 'w5-resumed', workload: 'W5', label: 'resumed or restarted', unit: '', better: 'none' },
    { key: 'w5-attempt', workload: 'W5', label: 'attempt counted', unit: '', better: 'none' },
    { key: 'w6-ms', workload: 'W6', label: `SIGKILL (${long}) → runs again elsewhere, defaults`, unit: 's', better: 'lower', scale: 1000 },
    { key: 'w6-resumed', workload: 'W6', label: 'resumed or restarted, defaults', unit: '', better: 'none' },
    { key: 'w6-attempt', workload: 'W6', label: 'attempt counted, defaults', unit: '', better: 'none' },
    { key: 'w6s-ms', workload: 'W6', label: 'SIGKILL → runs again, shortest lease/stall setting', unit: 's', better: 'lower', scale: 1000 },
    { key: 'w6s-resumed', workload: 'W6', label: 'resumed or restarted, shortest setting', unit: '', better: 'none' },
    { key: 'w6s-attempt', workload: 'W6', label: 'attempt counted, shortest setting', unit: '', better: 'none' },
    { key: 'w7', workload: 'W7', label: `3 processes, same every-second job, ${s.scheduleWindow / 1000} s: runs per tick`, unit: '', better: 'none' },
    ...s.concurrencies.map((c): Row => ({ key: `rss-c${c}`, workload: 'RSS', step: 'W2', label: `peak RSS of the W2 worker, concurrency ${c}`, unit: 'MB', better: 'lower' })),
    ...s.concurrencies.map(
      (c): Row => ({ key: `start-c${c}`, workload: 'START', step: 'W2', label: `start-up of the W2 worker (under tsx): spawn → ready to claim, concurrency ${c}`, unit: 'ms', better: 'lower' }),
    ),
  ];
}

const args = parseArgs(process.argv.slice(2));
const sizes = args.tiny ? TINY : FULL;
const durableSizes = args.tiny ? DURABLE_TINY : DURABLE_FULL;
const resultsDir = fileURLToPath(new URL('./results', import.meta.url));
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const batonVersion = (JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string }).version;
const log = (message: string) => process.stderr.write(`  ${message}\n`);

/** Storage of the running step, dropped after it. */
let tracked: Namespace[] = [];
const dropTracked = async () => {
  for (const ns of tracked.splice(0).reverse()) await ns.drop().catch(() => undefined);
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAllChildrenNow();
    void dropTracked()
      .then(dropLeftovers)
      .then(dropLeftoverSchemas)
      .finally(() => process.exit(130));
  });
}
process.on('exit', killAllChildrenNow);

const started = performance.now();
const loadBefore = loadavg()[0]!;

// --- which servers answer ---
let systems: AnySystem[] = (durable ? durableSystems(batonVersion, checkBuilt) : allSystems(batonVersion)).filter((s) => !args.systems || args.systems.has(s.name));
if (systems.length === 0) fail('no system selected');
const unreachable: Record<string, string> = {};
process.stderr.write(`\nbaton bench:compare — node ${process.version}, ${cpus().length} CPUs, ${args.reps} repetition(s)${args.tiny ? ', TINY sizes (harness check only)' : ''}\n`);
let redisVersion = '';
if (!durable) {
  try {
    redisVersion = await checkRedis();
  } catch {
    /* reported per system below */
  }
}
for (const system of systems) {
  try {
    await system.check();
    log(`${system.name} ${system.version}: server answers`);
  } catch (error) {
    unreachable[system.name] = (error as Error).message;
    process.stderr.write(`  !! ${system.name}: NOT RUN — ${unreachable[system.name]}\n`);
  }
}
systems = systems.filter((s) => !unreachable[s.name]);
if (systems.length === 0) {
  process.stderr.write('\nbench:compare not run: no server answered (see above)\n');
  process.exit(1);
}

// --- runs ---
/** Samples by row key, then system name. */
const samples = new Map<string, Map<string, Cell[]>>();
const raw: Array<{ workload: string; title: string; rep: number; system: string; result?: RunResult; error?: string; seconds: number }> = [];
const stepSeconds: Record<string, number> = {};

const ctx: Ctx & DurableCtx = {
  sizes: (durable ? durableSizes : sizes) as Sizes & typeof durableSizes,
  log,
  track(ns) {
    tracked.push(ns);
    return ns;
  },
};

async function runOne(step: Step, system: AnySystem, rep: number): Promise<RunResult | undefined> {
  const t0 = performance.now();
  try {
    const result = await step.run(system, ctx);
    for (const [key, cell] of Object.entries(result.cells)) {
      const bySystem = samples.get(key) ?? new Map<string, Cell[]>();
      samples.set(key, bySystem);
      bySystem.set(system.name, [...(bySystem.get(system.name) ?? []), cell]);
    }
    raw.push({ workload: step.workload, title: step.title, rep, system: system.name, result, seconds: (performance.now() - t0) / 1000 });
    return result;
  } catch (error) {
    const message = (error as Error).stack ?? String(error);
    process.stderr.write(`  FAILED ${step.workload} ${system.name}: ${message.split('\n').slice(0, 8).join('\n')}\n`);
    raw.push({ workload: step.workload, title: step.title, rep, system: system.name, error: message, seconds: (performance.now() - t0) / 1000 });
    return undefined;
  }
}

const errors = new Map<string, Set<string>>(); // workload → systems that failed
for (const step of STEPS) {
  if (args.only.size && !args.only.has(step.workload)) continue;
  const t0 = performance.now();
  process.stderr.write(`${step.workload} ${step.title}${step.parallel ? ' (systems side by side within a repetition)' : ''}\n`);
  const done = new Set<string>(); // systems whose outcome is final (not repeated)
  for (let rep = 1; rep <= args.reps; rep++) {
    const due = systems.filter((s) => !done.has(s.name));
    if (due.length === 0) break;
    const results = step.parallel
      ? await Promise.all(due.map((s) => runOne(step, s, rep)))
      : await (async () => {
          const out: Array<RunResult | undefined> = [];
          for (const s of due) {
            out.push(await runOne(step, s, rep));
            await killAllChildren();
            await dropTracked();
          }
          return out;
        })();
    await killAllChildren();
    await dropTracked();
    due.forEach((s, i) => {
      const r = results[i];
      if (!r) errors.set(step.workload, (errors.get(step.workload) ?? new Set()).add(s.name));
      if (!r || r.final) done.add(s.name);
    });
  }
  stepSeconds[`${step.workload} ${step.title}`] = (performance.now() - t0) / 1000;
  log(`(${((performance.now() - t0) / 1000).toFixed(1)} s)`);
}
await killAllChildren();
await dropTracked();
await dropLeftovers();
await dropLeftoverSchemas();
const left = await leftovers();

// --- table ---
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Agg {
  median?: number;
  min?: number;
  max?: number;
  capped: boolean;
  n: number;
  texts: string[];
}

function aggregate(cells: Cell[] | undefined): Agg | undefined {
  if (!cells?.length) return undefined;
  const numbers = cells.filter((c) => c.value !== undefined && Number.isFinite(c.value)).map((c) => c.value!);
  const texts = [...new Set(cells.filter((c) => c.text !== undefined).map((c) => c.text!))];
  return {
    ...(numbers.length ? { median: median(numbers), min: Math.min(...numbers), max: Math.max(...numbers) } : {}),
    capped: cells.some((c) => c.capped),
    n: cells.length,
    texts,
  };
}

function show(row: Row, agg: Agg | undefined, systemName: string): string {
  if (!agg) return errors.get(row.step ?? row.workload)?.has(systemName) ? 'FAILED' : '—';
  const f = (v: number) => (row.scale && v < row.scale ? (v / row.scale).toFixed(3) : formatNumber(v / (row.scale ?? 1)));
  const parts: string[] = [];
  if (agg.median !== undefined) {
    if (agg.capped && agg.min === agg.max) parts.push(`> ${f(agg.max!)}`);
    else parts.push(agg.n > 1 && agg.min !== agg.max ? `${f(agg.median)} (${f(agg.min!)}–${agg.capped ? '>' : ''}${f(agg.max!)})` : f(agg.median));
    if (row.perJob) parts.push(`${formatNumber(1_000_000 / agg.median)} µs/job`);
    if (agg.n === 1 && args.reps > 1) parts.push('n=1');
  }
  parts.push(...agg.texts);
  return parts.join(' · ');
}

function ratio(row: Row, baton: Agg | undefined, peers: Array<Agg | undefined>): string {
  if (row.better === 'none' || baton?.median === undefined || baton.capped) return '—';
  const numeric = peers.filter((p): p is Agg => p?.median !== undefined);
  if (!numeric.length) return '—';
  const best = numeric.reduce((a, b) => (row.better === 'higher' ? (b.median! > a.median! ? b : a) : b.median! < a.median! ? b : a));
  const r = baton.median / best.median!;
  return `${best.capped ? (row.better === 'lower' ? '< ' : '> ') : ''}${r < 0.1 ? r.toPrecision(2) : r.toFixed(2)}×`;
}

const tableRows = (durable ? durableRows(durableSizes) : rows(sizes)).filter((r) => samples.has(r.key) || [...(errors.get(r.step ?? r.workload) ?? [])].length);
const batons = systems.filter((s) => s.baton);
const peers = systems.filter((s) => !s.baton);
const medians = (key: string, system: string) => aggregate(samples.get(key)?.get(system))?.median;
/** Each W2 row's share of floor, by Baton system (none when no floor was measured). */
const shares = floorShares(tableRows, batons, medians);
const shareColumns = batons.filter((b) => tableRows.some((row) => shares.get(row.key)?.[b.name]));
const header = ['', 'figure', 'unit', ...systems.map((s) => s.name), ...batons.map((b) => `${b.name} / best peer`), ...shareColumns.map((b) => `${b.name} share of floor`)];
const body = tableRows.map((row) => {
  const bySystem = samples.get(row.key);
  const aggs = new Map(systems.map((s) => [s.name, aggregate(bySystem?.get(s.name))]));
  const arrow = row.better === 'higher' ? ' ↑' : row.better === 'lower' ? ' ↓' : '';
  return [
    row.workload,
    row.label,
    `${row.unit}${arrow}`,
    ...systems.map((s) => show(row, aggs.get(s.name), s.name)),
    ...batons.map((b) => ratio(row, aggs.get(b.name), peers.map((p) => aggs.get(p.name)))),
    ...shareColumns.map((b) => shares.get(row.key)?.[b.name] ?? '—'),
  ];
});

const totalSeconds = (performance.now() - started) / 1000;
const loadAfter = loadavg()[0]!;
let out = `\n## ${durable ? 'Durable execution: Baton vs DBOS Transact' : 'Baton vs graphile-worker, pg-boss, BullMQ'} (node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${(totalSeconds / 60).toFixed(1)} min)\n\n`;
out += `Medians over ${args.reps} interleaved repetition(s), (min–max) where they differ; "n=1": the outcome is the system's fixed behaviour (a bound hit, "never", "not supported"), not repeated. ↑ higher is better, ↓ lower is better; the ratio columns are Baton / the best peer on that row (> 1 on ↑ rows and < 1 on ↓ rows mean Baton leads).${args.tiny ? ' **TINY sizes: the figures mean nothing.**' : ''}\n\n`;
out += `${markdownTable(header, body)}\n\n`;
if (durable) out += `Versions: baton ${batonVersion} (this tree), ${peers.map((p) => `${p.name} ${p.version}`).join(', ')}. Load average (1 min) ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after.\n\n`;
else out += `Versions: baton ${batonVersion} (this tree), graphile-worker ${peers.find((p) => p.name === 'graphile-worker')?.version ?? '-'}, pg-boss ${peers.find((p) => p.name === 'pg-boss')?.version ?? '-'}, bullmq ${peers.find((p) => p.name === 'bullmq')?.version ?? '-'} (ioredis 6.0.0); Redis ${redisVersion || 'not reachable'} at ${REDIS.host}:${REDIS.port}. Load average (1 min) ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after.\n\n`;
out += `Options:\n${systems.flatMap((s) => s.options().map((o) => `- **${s.name}**: ${o}`)).join('\n')}\n`;
if (durable) out += `- every system: one worker process and one client process per run (\`node --import tsx\`; Baton from its dist/), concurrency 10; S1, S5 and S6 enqueue from the client with the worker idle and ready and time the enqueue to the last completion the worker reports; S2 is timed inside the job; S3 SIGKILLs the worker halfway through step ${durableSizes.s3KillAt} and starts a new worker process at once (the systems side by side within a repetition); S4 and S7 run one job at a time (S4: ${durableSizes.s4Trials} trials after ${durableSizes.s4Warmup} warm-up, S7: ${durableSizes.s7Trials} after ${durableSizes.s7Warmup}); every workload gives up after ${durableSizes.bound / 1000} s\n`;
else out += `- every system: workers and clients are separate child processes (\`node --import tsx\`, so each RSS and start-up includes the tsx loader, which compiles each system's fixture; every library loads from its built JavaScript as an installed package does: the peers' published builds, Baton's dist/ built by \`npm run build\` just before the run), jobs of W2–W6 run at concurrency 10 unless the row says otherwise; handlers stop cooperatively on whatever abort signal the system gives them; W5/W6 send the signal ${sizes.signalAfter} ms into the job and give up after ${sizes.bound / 1000} s; W6 and W7 run the systems side by side within a repetition (their times are lease and schedule waits, not CPU); W7 counts the runs of the ticks due in its window (by the tick's instant where the system gives one: Baton's scheduledFor, BullMQ's scheduler job id, graphile-worker's _cron.ts, pg-boss's creation minute) and starts minute-granular schedules ~33 s into a minute so the window holds one tick\n`;
for (const [name, why] of Object.entries(unreachable)) out += `\n**${name}: not run** — ${why}\n`;
if (left.length) out += `\n**Left behind:** ${left.join(', ')}\n`;
process.stdout.write(out);

const file = writeResults(resultsDir, stamp, { seconds: totalSeconds, loadAverage: { before: loadBefore, after: loadAfter } }, {
    reps: args.reps,
    tiny: args.tiny,
    sizes,
    section: durable ? 'durable' : 'queue',
    versions: durable ? { baton: batonVersion, ...Object.fromEntries(peers.map((p) => [p.name, p.version])) } : { baton: batonVersion, 'graphile-worker': '0.17.3', 'pg-boss': '10.4.2', bullmq: '6.7.0', ioredis: '6.0.0', redis: redisVersion },
    options: Object.fromEntries(systems.map((s) => [s.name, s.options()])),
    unreachable,
    stepSeconds,
    table: tableRows.map((row) => ({
      ...row,
      bySystem: Object.fromEntries(systems.map((s) => [s.name, { cells: samples.get(row.key)?.get(s.name) ?? [], ...aggregate(samples.get(row.key)?.get(s.name)) }])),
      ...(shares.has(row.key) ? { shareOfFloor: shares.get(row.key) } : {}),
    })),
    runs: raw.map((r) => ({ ...r, result: r.result && { ...r.result } })),
    leftBehind: left,
  });
process.stdout.write(`\nResults: ${file}\n`);
for (const [name, why] of Object.entries(unreachable)) process.stderr.write(`\n${name}: not run — ${why}\n`);
process.exitCode = Object.keys(unreachable).length || errors.size || left.length ? 1 : 0;
