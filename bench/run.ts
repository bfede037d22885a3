/**
 * `npm run bench [-- --only NAME[,NAME…]] [--driver sqlite] [--profile]`
 *
 * Runs the workloads one after another, each on fresh databases from the chosen
 * driver, with workers and clients in child processes (bench/fixtures). Prints a
 * markdown table (workload, figure, target from the issue, met?) and writes every
 * figure with its details to bench/results/<timestamp>.json (gitignored).
 * `--profile` records a CPU profile of the drain worker during the drain (the
 * `--cpu-prof` sampler) and prints where its CPU time went. Children are killed and databases dropped after each workload,
 * and on Ctrl-C.
 */
import { mkdirSync, writeFileSync, readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killAllChildren, killAllChildrenNow } from './lib/child.js';
import { summarizeProfile } from './lib/cpu-profile.js';
import { drivers } from './lib/drivers.js';
import { round } from './lib/stats.js';
import { formatNumber, markdownTable } from './lib/table.js';
import { meets, type Figure, type Workload, type WorkloadContext } from './lib/workload.js';
import { cancel } from './workloads/cancel.js';
import { drain } from './workloads/drain.js';
import { enqueue } from './workloads/enqueue.js';
import { handoff } from './workloads/handoff.js';
import { latency } from './workloads/latency.js';

const WORKLOADS: Workload[] = [enqueue, drain, latency, cancel, handoff];
/** Names `--only` also accepts. */
const ALIASES: Record<string, string> = { rss: 'drain' };

const USAGE = `usage: npm run bench -- [--only ${WORKLOADS.map((w) => w.name).join('|')}|rss[,…]] [--driver ${Object.keys(drivers).join('|')}] [--profile]`;

function parseArgs(argv: string[]) {
  const only = new Set<string>();
  let driver = 'sqlite';
  let profile = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i] ?? fail(`${flag} needs a value`);
    if (flag === '--only') for (const name of value().split(',')) only.add(ALIASES[name] ?? name);
    else if (flag === '--driver') driver = value();
    else if (flag === '--profile') profile = true;
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(`${USAGE}\n${WORKLOADS.map((w) => `  ${w.name.padEnd(8)} ${w.title}`).join('\n')}\n`);
      process.exit(0);
    } else fail(`unknown argument ${arg}`);
  }
  for (const name of only) if (!WORKLOADS.some((w) => w.name === name)) fail(`unknown workload ${name}`);
  if (!drivers[driver]) fail(`unknown driver ${driver}`);
  return { only, driver: drivers[driver]!, profile };
}

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

const args = parseArgs(process.argv.slice(2));
const resultsDir = fileURLToPath(new URL('./results', import.meta.url));
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const profileDir = args.profile ? join(resultsDir, `profile-${stamp}`) : undefined;
if (profileDir) mkdirSync(profileDir, { recursive: true });

/** Cleanups of the running workload (drop databases, remove bundles), run in reverse. */
const cleanups: Array<() => void | Promise<void>> = [];
const cleanUp = async () => {
  for (const fn of cleanups.splice(0).reverse()) await Promise.resolve().then(fn).catch(() => undefined);
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAllChildrenNow();
    void cleanUp().finally(() => process.exit(130));
  });
}
process.on('exit', killAllChildrenNow);

const log = (message: string) => process.stderr.write(`  ${message}\n`);
const selected = WORKLOADS.filter((w) => args.only.size === 0 || args.only.has(w.name));
const figures: Figure[] = [];
const settings: string[] = [];
const errors: Array<{ workload: string; error: string }> = [];
const started = performance.now();
const loadBefore = loadavg()[0]!;

process.stderr.write(`baton bench — driver ${args.driver.name}: ${args.driver.description}; node ${process.version}, ${cpus().length} CPUs\n`);
for (const workload of selected) {
  process.stderr.write(`${workload.name}: ${workload.title}\n`);
  const ctx: WorkloadContext = {
    driver: args.driver,
    async database(label) {
      const db = await args.driver.createDatabase(label);
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
    figures.push(...result.figures);
    settings.push(...result.settings);
  } catch (error) {
    const message = (error as Error).stack ?? String(error);
    errors.push({ workload: workload.name, error: message });
    process.stderr.write(`  FAILED: ${message}\n`);
  } finally {
    await killAllChildren();
    await cleanUp();
  }
  log(`(${round((performance.now() - workloadStarted) / 1000, 1)} s)`);
}

const rows = figures.map((f) => {
  const met = meets(f.value, f.target);
  return [f.workload, f.name, f.text ?? `${formatNumber(f.value)} ${f.unit}`, f.target?.text ?? '—', met === undefined ? '—' : met ? 'yes' : '**no**'];
});
for (const e of errors) rows.push([e.workload, 'FAILED (see stderr)', '—', '—', '**no**']);
const totalSeconds = (performance.now() - started) / 1000;
const loadAfter = loadavg()[0]!;
const busy = Math.max(loadBefore, loadAfter) > cpus().length;

let output = `\n## Baton bench (${args.driver.name}, node ${process.version}, ${cpus().length} CPUs, ${round(totalSeconds, 1)} s)\n\n`;
output += `Load average (1 min) ${round(loadBefore)} before, ${round(loadAfter)} after${busy ? ' — above the CPU count: other work competed for the CPUs, read the figures as lower bounds' : ''}.\n\n`;
output += `${markdownTable(['workload', 'figure', 'measured', 'target', 'met?'], rows)}\n`;
if (settings.length) output += `\nSettings and notes:\n${settings.map((s) => `- ${s}`).join('\n')}\n`;

const profiles: Record<string, unknown> = {};
if (profileDir) {
  for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
    const summary = summarizeProfile(join(profileDir, file));
    profiles[file] = summary;
    const busy = summary.totalMs - summary.idleMs;
    const pct = (ms: number) => `${round((100 * ms) / busy, 1)}%`;
    output += `\n### CPU profile ${file} (${round(summary.totalMs)} ms sampled, ${round(busy)} ms busy)\n\n`;
    output += `${markdownTable(['area (self time)', 'ms', '% of busy'], summary.areas.filter((a) => a.area !== 'idle').map((a) => [a.area, formatNumber(a.selfMs), pct(a.selfMs)]))}\n\n`;
    output += `${markdownTable(['top self time', 'where', 'self ms', '% of busy', 'total ms'], summary.bySelf.map((f) => [f.name, f.where, formatNumber(f.selfMs), pct(f.selfMs), formatNumber(f.totalMs)]))}\n\n`;
    output += `${markdownTable(['top total time', 'where', 'total ms', '% of busy'], summary.byTotal.map((f) => [f.name, f.where, formatNumber(f.totalMs), pct(f.totalMs)]))}\n`;
  }
  output += `\nProfiles: ${profileDir} (open in Chrome DevTools → Performance)\n`;
}
process.stdout.write(output);

mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `${stamp}.json`);
writeFileSync(
  file,
  `${JSON.stringify(
    {
      at: new Date().toISOString(),
      driver: args.driver.name,
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      seconds: totalSeconds,
      loadAverage: { before: loadBefore, after: loadAfter },
      workloads: selected.map((w) => w.name),
      figures: figures.map((f) => ({ ...f, met: meets(f.value, f.target) })),
      settings,
      errors,
      profiles,
    },
    null,
    2,
  )}\n`,
);
process.stdout.write(`\nResults: ${file}\n`);
process.exitCode = errors.length > 0 ? 1 : 0;
