import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { REPO_ROOT, spawnScript } from '../lib/child.js';
import { percentile, round } from '../lib/stats.js';
import type { Workload, WorkloadContext } from '../lib/workload.js';

/**
 * Builds src with scripts/build.mjs (the package's own build: tsc declarations,
 * esbuild bundle) into a fresh directory under bench/results (gitignored; inside the
 * repo so that node_modules resolves), so the figure is always of the current sources
 * and the shared dist/ is left alone. Takes a few seconds.
 * @returns the built entry (index.js) as a file URL, and a function removing the build
 * @throws Error with the build's output when it fails
 */
async function buildSources(): Promise<{ entry: string; remove: () => void }> {
  const results = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(results, { recursive: true });
  const outDir = mkdtempSync(join(results, '.startup-dist-'));
  const remove = () => rmSync(outDir, { recursive: true, force: true });
  const script = fileURLToPath(new URL('../../scripts/build.mjs', import.meta.url));
  const output = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [script, '--outdir', outDir], { cwd: REPO_ROOT });
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, text }));
  });
  if (output.code !== 0) {
    remove();
    throw new Error(`scripts/build.mjs failed (exit ${output.code}): ${output.text.slice(0, 2_000)}`);
  }
  return { entry: pathToFileURL(join(outDir, 'index.js')).href, remove };
}

/** What one start-up reported, plus the runner's own spawn → report time. */
interface StartUp {
  importMs: number;
  createMs: number;
  startMs: number;
  /** performance.now() in the child at ready: ms since its process started. */
  readyMs: number;
  /** From just before spawn() in the runner to the `ready` line arriving (adds process creation and the pipe). */
  spawnToReadyMs: number;
  rssMB: number;
}

/** Starts bench/fixtures/startup.mjs once under plain node and waits for its report and its exit. */
async function startOnce(entry: string, database: string, label: string): Promise<StartUp> {
  const fixture = fileURLToPath(new URL('../fixtures/startup.mjs', import.meta.url));
  const spawnedAt = performance.now();
  const child = spawnScript(fixture, { entry, database }, { name: label });
  const ready = await child.waitForType('ready');
  const spawnToReadyMs = performance.now() - spawnedAt;
  const { code } = await child.exited;
  if (code !== 0) throw new Error(`${label} exited with ${code}; stderr:\n${child.stderr}`);
  return { ...(ready as unknown as Omit<StartUp, 'spawnToReadyMs'>), spawnToReadyMs };
}

const p50 = (xs: number[]) => round(percentile(xs, 50), 1);
const p95 = (xs: number[]) => round(percentile(xs, 95), 1);

/**
 * Workload 10: how soon a worker process can claim. Builds src as
 * `npm run build` does (scripts/build.mjs, into a temporary directory), then starts
 * bench/fixtures/startup.mjs under plain `node` `startupRuns` times (20; `--tiny`: 3), one after another, on
 * one database of this driver (migrated by a warm-up start that is not counted):
 * each imports the built `baton-jobs`, calls `createBaton` and `worker.start()`, and
 * reports `performance.now()` at ready — ms since its process started, node's own
 * bootstrap included. The figure is the median of those (target ≤ 150 ms), with
 * p95; the settings line splits it into bootstrap, import, createBaton and start.
 */
export const startup: Workload = {
  name: 'startup',
  title: 'start-up of a worker under plain node: process start → ready to claim',
  async run(ctx: WorkloadContext) {
    const runs = ctx.sizes.startupRuns;
    const build = await buildSources();
    ctx.onCleanup(build.remove);
    const database = await ctx.database('startup');
    await startOnce(build.entry, database, 'startup warm-up');
    const samples: StartUp[] = [];
    for (let i = 0; i < runs; i++) samples.push(await startOnce(build.entry, database, `startup ${i + 1}`));
    const ready = samples.map((s) => s.readyMs);
    const bootstrap = samples.map((s) => s.readyMs - s.importMs - s.createMs - s.startMs);
    const phases = `bootstrap ${p50(bootstrap)}, import ${p50(samples.map((s) => s.importMs))}, createBaton ${p50(samples.map((s) => s.createMs))}, worker.start() ${p50(samples.map((s) => s.startMs))}`;
    ctx.log(`start-up: p50 ${p50(ready)} ms, p95 ${p95(ready)} ms over ${runs} starts (${phases})`);
    return {
      figures: [
        {
          workload: '10. start-up',
          name: `node start → worker ready to claim (plain node, npm run build), ${runs} starts`,
          value: p50(ready),
          unit: 'ms',
          text: `p50 ${p50(ready)} / p95 ${p95(ready)} ms`,
          target: ctx.driver.targets.startup,
          detail: {
            runs,
            readyMs: { p50: p50(ready), p95: p95(ready) },
            medianMs: { bootstrap: p50(bootstrap), import: p50(samples.map((s) => s.importMs)), createBaton: p50(samples.map((s) => s.createMs)), start: p50(samples.map((s) => s.startMs)) },
            spawnToReadyMs: { p50: p50(samples.map((s) => s.spawnToReadyMs)), p95: p95(samples.map((s) => s.spawnToReadyMs)) },
            rssAtReadyMB: p50(samples.map((s) => s.rssMB)),
          },
        },
      ],
      settings: [
        `start-up: medians of ${runs} starts in ms — ${phases} (bootstrap: node's own, before the fixture's first line); spawn → ready line in the runner ${p50(samples.map((s) => s.spawnToReadyMs))} ms; one task, default worker options and logger`,
      ],
    };
  },
};
