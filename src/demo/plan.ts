/**
 * Planning a `baton demo` run: find the unfinished run over a directory to resume,
 * or list the directory and enqueue a new run (one `demo:hash` job per file plus
 * one `demo:manifest` job, in one transaction, in the run's own queue
 * `demo:<runId>`). `--fresh` cancels the jobs of older unfinished runs over the same
 * directory, except a run another demo works right now. See run.ts for working it.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { packageRoot } from '../package-root.js';
import type { Baton } from '../baton.js';
import type { Job } from '../job/types.js';
import { HASH_TASK, MANIFEST_TASK, manifestItemsDone, type ManifestPayload } from './tasks.js';


/**
 * The directory the demo reads when none is given: this package's node_modules
 * (thousands of real files), or, when Baton is itself installed as a dependency,
 * the node_modules it sits in.
 */
export function defaultDemoDir(): string {
  const root = packageRoot();
  const own = join(root, 'node_modules');
  if (existsSync(own)) return own;
  const parent = dirname(root);
  return basename(parent) === 'node_modules' ? parent : process.cwd();
}

/** Prefix of every demo queue. */
export const DEMO_QUEUE_PREFIX = 'demo:';

/** A run as found or created by {@link planDemo}. */
export interface DemoPlan {
  runId: string;
  queue: string;
  root: string;
  /** Hash jobs (files) in the run. */
  files: number;
  manifestJobId: number;
  manifestJsonl: string;
  manifestFile: string;
  /** True when an unfinished run was found and is continued. */
  resumed: boolean;
  /** On resume: items the manifest job had recorded done; null when it has no checkpoint yet. */
  manifestFrom: number | null;
  /** Directory entries skipped while listing (unreadable directories, sockets, links to directories). */
  skipped: number;
  /** On resume: jobs still `running` whose lease has expired (their demo was killed); the worker takes them over. */
  orphaned: number;
  /** On resume: jobs `running` under a live lease: another demo works this run now (or was killed less than a lease ago). */
  busy: number;
  /** With `fresh`: older unfinished runs over the same directory whose unfinished jobs were cancelled. */
  discarded: Array<{ runId: string; jobs: number }>;
  /** With `fresh`: older unfinished runs left alone because another demo is working them (jobs under live leases). */
  leftAlone: string[];
}

/**
 * Finds the unfinished run over `dir` (unless `fresh`) or lists `dir` and
 * enqueues a new run: one hash job per file, and the manifest job first in line.
 * @param options.out - directory of the manifest files (created)
 */
export async function planDemo(baton: Baton, options: { dir: string; out: string; fresh?: boolean }): Promise<DemoPlan> {
  const root = resolve(options.dir);
  const info = await stat(root).catch(() => null);
  if (!info?.isDirectory()) throw new DemoError(`${options.dir} is not a directory`);
  if (!options.fresh) {
    const found = await findUnfinished(baton, root);
    if (found) return found;
  }
  const out = resolve(options.out);
  try {
    await mkdir(out, { recursive: true });
  } catch (error) {
    throw new DemoError(`cannot create the --out directory ${options.out}: ${(error as Error).message}`);
  }
  const { files, skipped } = await listFiles(root);
  const runId = newRunId();
  const queue = `${DEMO_QUEUE_PREFIX}${runId}`;
  const payload: ManifestPayload = {
    runId,
    root,
    queue,
    jsonl: join(out, `manifest-${runId}.jsonl`),
    manifest: join(out, `manifest-${runId}.json`),
  };
  const jobs = await baton.enqueueMany([
    { task: MANIFEST_TASK, payload, options: { queue, priority: -1 } },
    ...files.map((path) => ({ task: HASH_TASK, payload: { root, path }, options: { queue } })),
  ]);
  const { discarded, leftAlone } = options.fresh ? await discardUnfinished(baton, root, queue) : { discarded: [], leftAlone: [] };
  return {
    runId,
    queue,
    root,
    files: files.length,
    manifestJobId: jobs[0]!.id,
    manifestJsonl: payload.jsonl,
    manifestFile: payload.manifest,
    resumed: false,
    manifestFrom: null,
    skipped,
    orphaned: 0,
    busy: 0,
    discarded,
    leftAlone,
  };
}

/** Thrown for a demo that cannot start (bad directory, too little concurrency). */
export class DemoError extends Error {
  override name = 'DemoError';
}

/** Unfinished demo runs over `root`, newest first: queue, manifest job and the job count. */
async function unfinishedRuns(baton: Baton, root: string): Promise<Array<{ queue: string; manifest: Job; total: number }>> {
  const counts = await baton.queueCounts(DEMO_QUEUE_PREFIX);
  const open = [...new Set(counts.filter((c) => (c.state === 'queued' || c.state === 'running') && c.count > 0).map((c) => c.queue))].sort().reverse();
  const runs = [];
  for (const queue of open) {
    const [listed] = await baton.listJobs({ queue, task: MANIFEST_TASK, limit: 1 });
    const manifest = listed && (await baton.getJob(listed.id));
    if (!manifest || (manifest.payload as unknown as ManifestPayload).root !== root) continue;
    runs.push({ queue, manifest, total: counts.filter((c) => c.queue === queue).reduce((n, c) => n + c.count, 0) });
  }
  return runs;
}

/** Running jobs of `queue`, split by lease: expired (their worker is gone) or live. */
async function runningLeases(baton: Baton, queue: string, now = Date.now()): Promise<{ expired: number; live: number }> {
  let expired = 0;
  let live = 0;
  let before: number | undefined;
  for (;;) {
    const page = await baton.listJobs({ queue, state: 'running', limit: 1000, ...(before === undefined ? {} : { before }) });
    for (const job of page) {
      if (job.leaseExpiresAt !== null && job.leaseExpiresAt.getTime() <= now) expired++;
      else live++;
    }
    if (page.length < 1000) break;
    before = page.at(-1)!.id;
  }
  return { expired, live };
}

async function findUnfinished(baton: Baton, root: string): Promise<DemoPlan | null> {
  const [run] = await unfinishedRuns(baton, root);
  if (!run) return null;
  const payload = run.manifest.payload as unknown as ManifestPayload;
  const leases = await runningLeases(baton, run.queue);
  return {
    runId: payload.runId,
    queue: run.queue,
    root,
    files: run.total - 1,
    manifestJobId: run.manifest.id,
    manifestJsonl: payload.jsonl,
    manifestFile: payload.manifest,
    resumed: true,
    manifestFrom: run.manifest.checkpoint === null ? null : manifestItemsDone(run.manifest.checkpoint),
    skipped: 0,
    orphaned: leases.expired,
    busy: leases.live,
    discarded: [],
    leftAlone: [],
  };
}

/**
 * `--fresh`: cancels the queued and running jobs of the older unfinished runs over
 * `root` (all but `keep`), so a later plain run does not resume one of them. A run
 * with a job under a live lease is being worked by another demo and is left alone.
 */
async function discardUnfinished(baton: Baton, root: string, keep: string): Promise<{ discarded: DemoPlan['discarded']; leftAlone: string[] }> {
  const discarded: DemoPlan['discarded'] = [];
  const leftAlone: string[] = [];
  for (const run of await unfinishedRuns(baton, root)) {
    if (run.queue === keep) continue;
    const runId = (run.manifest.payload as unknown as ManifestPayload).runId;
    if ((await runningLeases(baton, run.queue)).live > 0) {
      leftAlone.push(runId);
      continue;
    }
    const reason = `discarded: demo run ${keep.slice(DEMO_QUEUE_PREFIX.length)} was started with --fresh`;
    let jobs = 0;
    for (const state of ['queued', 'running'] as const) {
      let before: number | undefined;
      for (;;) {
        const page = await baton.listJobs({ queue: run.queue, state, limit: 200, ...(before === undefined ? {} : { before }) });
        // A few at once: thousands of one-row cancels, one round trip each.
        for (let i = 0; i < page.length; i += 8) {
          const results = await Promise.all(page.slice(i, i + 8).map((job) => baton.cancel(job.id, reason)));
          jobs += results.filter((r) => r.outcome !== 'unchanged').length;
        }
        if (page.length < 200) break;
        before = page.at(-1)!.id;
      }
    }
    discarded.push({ runId, jobs });
  }
  return { discarded, leftAlone };
}

/**
 * Lists the files under `root`, sorted, as paths relative to it. Regular files and
 * links to files are listed; a dangling link is listed too (its job fails with a
 * clear error). Links to directories, sockets, FIFOs and unreadable directories are
 * skipped (a FIFO would block a reader forever).
 */
export async function listFiles(root: string): Promise<{ files: string[]; skipped: number }> {
  const files: string[] = [];
  let skipped = 0;
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      skipped++;
      return;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) files.push(relative(root, path));
      else if (entry.isSymbolicLink()) {
        const target = await stat(path).catch(() => null);
        if (!target || target.isFile()) files.push(relative(root, path));
        else skipped++;
      } else skipped++;
    }
  };
  await walk(root);
  files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { files, skipped };
}

/** "20250131-142503-123": sorts by time, readable in file names. */
function newRunId(now = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}-${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}-${p(now.getMilliseconds(), 3)}`;
}
