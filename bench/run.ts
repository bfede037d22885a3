/**
 * `npm run bench [-- --only NAME[,NAME…]] [--driver sqlite|postgres|all] [--profile] [--tiny]`
 *
 * Runs the workloads one after another, each on fresh databases from the chosen
 * driver (SQLite: a temp file; PostgreSQL: a schema of its own in the database at
 * BATON_BENCH_DATABASE_URL), with workers and clients in child processes
 * (bench/fixtures). `--driver all` runs every driver in turn and prints one table
 * with a column per driver. Prints a markdown table (workload, figure, target from
 * the issue for that driver, met?) and writes every figure with its details to
 * bench/results/<timestamp>.json (gitignored). `--profile` records a CPU profile of
 * the drain worker during the drain (the `--cpu-prof` sampler) and prints where
 * its CPU time went. Children are killed and databases dropped after each
 * workload, and on Ctrl-C. A driver whose database does not answer is reported and
 * makes the run exit non-zero. The `floor` workload (bench/floor: the lean storage
 * cycle with no job system) runs whenever `drain` does, and every drain row prints
 * its share of that floor (a column "share of floor"). `--tiny` runs every workload on a few hundred jobs
 * and a few trials: it checks that the bench runs (the test suite does), its
 * figures mean nothing. Opt-in workloads (hours at full size) run only when `--only`
 * names them.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killAllChildren, killAllChildrenNow } from './lib/child.js';
import { shareOfFloor } from './floor/variants.js';
import { summarizeProfile, type ProfileSummary } from './lib/cpu-profile.js';
import { dropLeftoverSchemas, drivers, type BenchDriver } from './lib/drivers.js';
import { writeResults } from './lib/results.js';
import { round } from './lib/stats.js';
import { formatNumber, markdownTable } from './lib/table.js';
import { FULL_SIZES, meets, TINY_SIZES, type Figure, type Workload, type WorkloadContext } from './lib/workload.js';
import { backlog } from './workloads/backlog.js';
import { cancel } from './workloads/cancel.js';
import { drain } from './workloads/drain.js';
import { enqueue } from './workloads/enqueue.js';
import { floor } from './workloads/floor.js';
import { flow } from './workloads/flow.js';
import { handoff } from './workloads/handoff.js';
import { history } from './workloads/history.js';
import { latency } from './workloads/latency.js';
import { manyRunning } from './workloads/many-running.js';
import { startup } from './workloads/startup.js';

const WORKLOADS: Workload[] = [enqueue, floor, drain, latency, cancel, handoff, manyRunning, backlog, history, flow, startup];
/** Names `--only` also accepts. */
const ALIASES: Record<string, string> = { rss: 'drain' };

const USAGE = `usage: npm run bench -- [--only ${WORKLOADS.map((w) => w.name).join('|')}|rss[,…]] [--driver ${[...Object.keys(drivers), 'all'].join('|')}] [--profile] [--tiny]`;

function parseArgs(argv: string[]) {
  const only = new Set<string>();
  let driver = 'sqlite';
  let profile = false;
  let tiny = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i] ?? fail(`${flag} needs a value`);
    if (flag === '--only') for (const name of value().split(',')) only.add(ALIASES[name] ?? name);
    else if (flag === '--driver') driver = value();
    else if (flag === '--profile') profile = true;
    else if (flag === '--tiny') tiny = true;
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(`${USAGE}\n${WORKLOADS.map((w) => `  ${w.name.padEnd(12)} ${w.title}${w.optIn ? ' (only with --only)' : ''}`).join('\n')}\n`);
      process.exit(0);
    } else fail(`unknown argument ${arg}`);
  }
  for (const name of only) if (!WORKLOADS.some((w) => w.name === name)) fail(`unknown workload ${name}`);
  if (only.has('drain')) only.add('floor'); // the drains' share of floor is measured in the same run
  if (driver !== 'all' && !drivers[driver]) fail(`unknown driver ${driver}`);
  return { only, driverArg: driver, drivers: driver === 'all' ? Object.values(drivers) : [drivers[driver]!], profile, tiny };
}

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

/** What one driver's pass over the workloads produced. */
interface DriverRun {
  driver: BenchDriver;
  /** Why the driver was not run (its database did not answer). */
  unreachable?: string;
  seconds: number;
  figures: Figure[];
  settings: string[];
  errors: Array<{ workload: string; error: string }>;
  profiles: Record<string, ProfileSummary>;
}

const args = parseArgs(process.argv.slice(2));
const resultsDir = fileURLToPath(new URL('./results', import.meta.url));
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const sizes = args.tiny ? TINY_SIZES : FULL_SIZES;
const profileRoot = args.profile ? join(resultsDir, `profile-${stamp}`) : undefined;

/** Cleanups of the running workload (drop databases, remove bundles), run in reverse. */
const cleanups: Array<() => void | Promise<void>> = [];
const cleanUp = async () => {
  for (const fn of cleanups.splice(0).reverse()) await Promise.resolve().then(fn).catch(() => undefined);
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAllChildrenNow();
    void cleanUp()
      .then(dropLeftoverSchemas)
      .finally(() => process.exit(130));
  });
}
process.on('exit', killAllChildrenNow);

const log = (message: string) => process.stderr.write(`  ${message}\n`);
const selected = WORKLOADS.filter((w) => (args.only.size === 0 ? !w.optIn : args.only.has(w.name)));
const started = performance.now();
const loadBefore = loadavg()[0]!;

async function runDriver(driver: BenchDriver): Promise<DriverRun> {
  const run: DriverRun = { driver, seconds: 0, figures: [], settings: [], errors: [], profiles: {} };
  const driverStarted = performance.now();
  try {
    await driver.check();
  } catch (error) {
    run.unreachable = (error as Error).message;
    process.stderr.write(`\nbaton bench — driver ${driver.name}: NOT RUN. ${run.unreachable}\n`);
    return run;
  }
  process.stderr.write(`\nbaton bench — driver ${driver.name}: ${driver.description}; node ${process.version}, ${cpus().length} CPUs${args.tiny ? '; TINY sizes (harness check only)' : ''}\n`);
  const profileDir = profileRoot ? join(profileRoot, driver.name) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  for (const workload of selected) {
    process.stderr.write(`${driver.name} ${workload.name}: ${workload.title}\n`);
    const ctx: WorkloadContext = {
      driver,
      sizes,
      async database(label) {
        const db = await driver.createDatabase(label);
        cleanups.push(() => db.drop());
        return db.url;
      },
      onCleanup: (fn) => void cleanups.push(fn),
      profileDir,
      log,
    };
    const workloadStarted = performance.now();
    try {
      const result = await workload.run(ctx);
      run.figures.push(...result.figures);
      run.settings.push(...result.settings);
    } catch (error) {
      const message = (error as Error).stack ?? String(error);
      run.errors.push({ workload: workload.name, error: message });
      process.stderr.write(`  FAILED: ${message}\n`);
    } finally {
      await killAllChildren();
      await cleanUp();
    }
    log(`(${round((performance.now() - workloadStarted) / 1000, 1)} s)`);
  }
  if (profileDir) {
    for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
      run.profiles[file] = summarizeProfile(join(profileDir, file));
    }
  }
  run.seconds = (performance.now() - driverStarted) / 1000;
  return run;
}

const runs: DriverRun[] = [];
for (const driver of args.drivers) runs.push(await runDriver(driver));
await dropLeftoverSchemas();
if (runs.every((r) => r.unreachable)) {
  process.stderr.write(`\nbench not run: no database answered (see above)\n`);
  process.exit(1);
}

const measured = (f: Figure) => f.text ?? `${formatNumber(f.value)} ${f.unit}`;
const metText = (f: Figure) => {
  const met = meets(f.value, f.target);
  return met === undefined ? '—' : met ? 'yes' : '**no**';
};
const key = (f: Figure) => `${f.workload}\u0000${f.name}`;
/** Every (workload, figure) row in the order the runs produced them, a workload's rows together (drivers name some figures differently). */
const workloadOrder = [...new Set(runs.flatMap((r) => r.figures.map((f) => f.workload)))];
const rowKeys = [...new Set(runs.flatMap((r) => r.figures.map(key)))].sort((a, b) => workloadOrder.indexOf(a.split('\u0000')[0]!) - workloadOrder.indexOf(b.split('\u0000')[0]!));
const failedWorkloads = [...new Set(runs.flatMap((r) => r.errors.map((e) => e.workload)))];

/** Each drain figure's share of its driver's floor measured in the same run (bench/floor/variants.ts). */
const shares = new Map<Figure, string>();
for (const run of runs) {
  const floors = new Map(run.figures.filter((f) => typeof f.detail?.floor === 'string').map((f) => [f.detail!.floor as string, f.value]));
  if (floors.size === 0) continue;
  for (const f of run.figures) {
    if (f.workload === '2. drain') shares.set(f, shareOfFloor(run.driver.name, floors, f.value, f.detail!.concurrency as number));
  }
}
/** The "share of floor" column is printed when some drain has a share. */
const withShare = shares.size > 0;
const blanks = withShare ? ['—', '—', '—', '—'] : ['—', '—', '—'];

const rows: string[][] = [];
for (const k of rowKeys) {
  const [workload, name] = k.split('\u0000') as [string, string];
  const cells = [workload, name];
  for (const run of runs) {
    const f = run.figures.find((x) => key(x) === k);
    if (run.unreachable) cells.push('not run', ...blanks.slice(1));
    else if (!f) cells.push(...blanks);
    else cells.push(measured(f), ...(withShare ? [shares.get(f) ?? '—'] : []), f.target?.text ?? '—', metText(f));
  }
  rows.push(cells);
}
for (const workload of failedWorkloads) {
  const cells = [workload, 'FAILED (see stderr)'];
  for (const run of runs) cells.push(...(run.errors.some((e) => e.workload === workload) ? ['FAILED', ...blanks.slice(2), '**no**'] : blanks));
  rows.push(cells);
}

const totalSeconds = (performance.now() - started) / 1000;
const loadAfter = loadavg()[0]!;
const busy = Math.max(loadBefore, loadAfter) > cpus().length;
const names = runs.map((r) => r.driver.name);
const share = withShare ? ['share of floor'] : [];
const header =
  runs.length === 1
    ? ['workload', 'figure', 'measured', ...share, 'target', 'met?']
    : ['workload', 'figure', ...runs.flatMap((r) => [r.driver.name, ...share, 'target', 'met?'])];

let output = `\n## Baton bench (${names.join(' + ')}, node ${process.version}, ${cpus().length} CPUs, ${round(totalSeconds, 1)} s)\n\n`;
for (const run of runs) {
  output += run.unreachable ? `- ${run.driver.name}: **not run** — ${run.unreachable}\n` : `- ${run.driver.name}: ${run.driver.description} (${round(run.seconds, 1)} s)\n`;
}
if (args.tiny) output += `\n**TINY sizes (--tiny): a check that the bench runs; the figures mean nothing.**\n`;
output += `\nLoad average (1 min) ${round(loadBefore)} before, ${round(loadAfter)} after${busy ? ' — above the CPU count: other work competed for the CPUs, read the figures as lower bounds' : ''}.\n\n`;
if (rows.length) output += `${markdownTable(header, rows)}\n`;

// Settings: lines every run printed once, the others prefixed by their driver.
const settingLines: string[] = [];
for (const run of runs) {
  for (const s of run.settings) {
    const everywhere = runs.every((r) => r.unreachable || r.settings.includes(s));
    const line = everywhere || runs.length === 1 ? s : `${run.driver.name} — ${s}`;
    if (!settingLines.includes(line)) settingLines.push(line);
  }
}
if (settingLines.length) output += `\nSettings and notes:\n${settingLines.map((s) => `- ${s}`).join('\n')}\n`;

for (const run of runs) {
  for (const [file, summary] of Object.entries(run.profiles)) {
    const busyMs = summary.totalMs - summary.idleMs;
    const pct = (ms: number) => `${round((100 * ms) / busyMs, 1)}%`;
    output += `\n### CPU profile ${run.driver.name}/${file} (${round(summary.totalMs)} ms sampled, ${round(busyMs)} ms busy)\n\n`;
    output += `${markdownTable(['area (self time)', 'ms', '% of busy'], summary.areas.filter((a) => a.area !== 'idle').map((a) => [a.area, formatNumber(a.selfMs), pct(a.selfMs)]))}\n\n`;
    output += `${markdownTable(['top self time', 'where', 'self ms', '% of busy', 'total ms'], summary.bySelf.map((f) => [f.name, f.where, formatNumber(f.selfMs), pct(f.selfMs), formatNumber(f.totalMs)]))}\n\n`;
    output += `${markdownTable(['top total time', 'where', 'total ms', '% of busy'], summary.byTotal.map((f) => [f.name, f.where, formatNumber(f.totalMs), pct(f.totalMs)]))}\n`;
  }
}
if (profileRoot) output += `\nProfiles: ${profileRoot} (open in Chrome DevTools → Performance)\n`;
process.stdout.write(output);

const file = writeResults(resultsDir, stamp, { seconds: totalSeconds, loadAverage: { before: loadBefore, after: loadAfter } }, {
    driver: args.driverArg,
    tiny: args.tiny,
    sizes,
    workloads: selected.map((w) => w.name),
    runs: runs.map((r) => ({
      driver: r.driver.name,
      description: r.driver.description,
      ...(r.unreachable ? { unreachable: r.unreachable } : {}),
      seconds: r.seconds,
      figures: r.figures.map((f) => ({ ...f, met: meets(f.value, f.target), ...(shares.has(f) ? { shareOfFloor: shares.get(f) } : {}) })),
      settings: r.settings,
      errors: r.errors,
      profiles: r.profiles,
    })),
  });
process.stdout.write(`\nResults: ${file}\n`);
const unreachable = runs.filter((r) => r.unreachable);
for (const r of unreachable) process.stderr.write(`\n${r.driver.name}: not run — ${r.unreachable}\n`);
process.exitCode = runs.some((r) => r.unreachable || r.errors.length > 0) ? 1 : 0;
