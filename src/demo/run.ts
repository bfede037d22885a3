/**
 * `baton demo`: enqueue (or resume) a run over a directory, work it off with one
 * worker, and sum it up. The CLI adapter (src/cli/commands/demo.ts) only draws.
 *
 * A run lives in its own queue `demo:<runId>`: one `demo:hash` job per file plus
 * one `demo:manifest` job, enqueued in one transaction. Resuming means finding the
 * newest run over the same directory that still has queued or running jobs
 * (`queueCounts('demo:')`) and working its queue again: nothing is enqueued twice,
 * released jobs run again without their attempt counted, and the manifest job goes
 * on from its checkpoint. `--fresh` starts a new run and cancels the jobs of the
 * older unfinished runs over the same directory (unless another demo is working
 * one right now), so a later plain run does not resume a run nobody wants.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Baton } from '../baton.js';
import type { Job, JobState } from '../job/types.js';
import type { StopSummary } from '../observe/events.js';
import type { Worker } from '../worker/worker.js';
import { HASH_TASK, MANIFEST_TASK, createDemoTasks, manifestItemsDone, readEntries, type HashResult, type ManifestPayload, type ManifestResult } from './tasks.js';

/**
 * The directory the demo reads when none is given: this package's node_modules
 * (thousands of real files), or, when Baton is itself installed as a dependency,
 * the node_modules it sits in.
 */
export function defaultDemoDir(): string {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const own = join(root, 'node_modules');
  if (existsSync(own)) return own;
  const parent = dirname(root);
  return basename(parent) === 'node_modules' ? parent : process.cwd();
}

/** Lease of the demo's worker, ms: short, so after a crash (kill -9) the next run takes its jobs over within seconds. */
export const DEMO_LEASE_TTL = 10_000;

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

/** Counts of a run at one moment. */
export interface DemoStatus {
  files: number;
  /** Hash jobs completed, failed or cancelled. */
  filesDone: number;
  filesFailed: number;
  manifest: { state: JobState; current: number; total: number };
  /** True when every job of the run is completed, failed or cancelled. */
  finished: boolean;
}

/** What a finished or interrupted run sums up to. */
export interface DemoSummary {
  status: DemoStatus;
  completed: number;
  failed: number;
  cancelled: number;
  bytes: number;
  gzipBytes: number;
  /** The first few failed files: path and the last error. */
  failures: Array<{ jobId: number; path: string; message: string }>;
  manifest: { jobId: number; state: JobState; file: string | null; jsonl: string; entries: number; itemsDone: number };
  /** Jobs this process finished (completed, failed, cancelled) and the time it ran, ms. */
  session: { jobs: number; ms: number };
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
    const [manifest] = await baton.listJobs({ queue, task: MANIFEST_TASK, limit: 1 });
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

/** A run being worked by a worker of this process. */
export interface DemoSession {
  readonly worker: Worker;
  /** Resolves when every job of the run is finished (completed, failed or cancelled). */
  readonly finished: Promise<void>;
  /** Graceful stop (drain, abort, release); `now` skips to the release. */
  stop(options?: { now?: boolean }): Promise<StopSummary>;
  /** Jobs this session finished. */
  readonly jobsDone: number;
  readonly startedAt: number;
}

/** Worker settings of the demo: a short drain so Ctrl-C hands the manifest back promptly. */
export interface DemoWorkerOptions {
  /** Jobs at once, at least 2 (the manifest job waits on hash jobs). @defaultValue 8 */
  concurrency?: number;
  /** @defaultValue 1000 */
  drainTimeout?: number;
  /** Per-entry delay of the manifest job (tests). @defaultValue 0 */
  manifestDelayMs?: number;
  /** Called with fresh counts every `statusInterval` ms. */
  onStatus?: (status: DemoStatus) => void;
  /** @defaultValue 200 */
  statusInterval?: number;
}

/** Starts a worker on the run's queue and watches the run until every job is finished. */
export async function startDemo(baton: Baton, plan: DemoPlan, options: DemoWorkerOptions = {}): Promise<DemoSession> {
  const concurrency = options.concurrency ?? 8;
  if (concurrency < 2) throw new DemoError('the demo needs --concurrency of at least 2 (the manifest job waits on the hash jobs)');
  const tasks = createDemoTasks({ client: baton, ...(options.manifestDelayMs ? { manifestDelayMs: options.manifestDelayMs } : {}) });
  const worker = baton.worker({
    tasks: tasks.all,
    queues: [plan.queue],
    concurrency,
    drainTimeout: options.drainTimeout ?? 1000,
    leaseTtl: DEMO_LEASE_TTL,
  });
  let jobsDone = 0;
  for (const event of ['job:completed', 'job:failed', 'job:cancelled'] as const) {
    worker.on(event, (e) => {
      if (event !== 'job:failed' || (e as { retryAt: Date | null }).retryAt === null) jobsDone++;
    });
  }
  const startedAt = Date.now();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const finished = new Promise<void>((resolveFinished, reject) => {
    const tick = async () => {
      if (stopped) return;
      try {
        const status = await readStatus(baton, plan);
        if (stopped) return;
        options.onStatus?.(status);
        if (status.finished) {
          stopped = true;
          resolveFinished();
          return;
        }
      } catch (error) {
        if (stopped) return;
        reject(error as Error);
        return;
      }
      timer = setTimeout(() => void tick(), options.statusInterval ?? 200);
    };
    void tick();
  });
  await worker.start();
  return {
    worker,
    finished,
    get jobsDone() {
      return jobsDone;
    },
    startedAt,
    stop(stopOptions) {
      stopped = true;
      clearTimeout(timer);
      return worker.stop(stopOptions);
    },
  };
}

/** Counts of the run now (one grouped count and one job read). */
export async function readStatus(baton: Baton, plan: DemoPlan): Promise<DemoStatus> {
  const counts = (await baton.queueCounts(plan.queue)).filter((c) => c.queue === plan.queue);
  const manifest = await baton.getJob(plan.manifestJobId);
  const count = (state: JobState) => counts.filter((c) => c.state === state).reduce((n, c) => n + c.count, 0);
  const manifestFinished = manifest.state === 'completed' || manifest.state === 'failed' || manifest.state === 'cancelled';
  const terminal = count('completed') + count('failed') + count('cancelled');
  return {
    files: plan.files,
    filesDone: terminal - (manifestFinished ? 1 : 0),
    filesFailed: count('failed') - (manifest.state === 'failed' ? 1 : 0),
    manifest: {
      state: manifest.state,
      current: Math.max(manifest.progress?.current ?? 0, manifest.checkpoint === null ? 0 : manifestItemsDone(manifest.checkpoint)),
      total: manifest.progress?.total ?? plan.files,
    },
    finished: count('queued') + count('running') === 0,
  };
}

/** Sums the run up from its jobs (read in pages of 1000). */
export async function summarize(baton: Baton, plan: DemoPlan, session?: DemoSession): Promise<DemoSummary> {
  const status = await readStatus(baton, plan);
  const summary: DemoSummary = {
    status,
    completed: 0,
    failed: 0,
    cancelled: 0,
    bytes: 0,
    gzipBytes: 0,
    failures: [],
    manifest: { jobId: plan.manifestJobId, state: status.manifest.state, file: null, jsonl: plan.manifestJsonl, entries: 0, itemsDone: 0 },
    session: { jobs: session?.jobsDone ?? 0, ms: session ? Date.now() - session.startedAt : 0 },
  };
  const failures: Job[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await baton.listJobs({ queue: plan.queue, task: HASH_TASK, limit: 1000, ...(before === undefined ? {} : { before }) });
    for (const job of page) {
      if (job.state === 'completed') {
        const r = job.result as unknown as HashResult;
        summary.completed++;
        summary.bytes += r.bytes;
        summary.gzipBytes += r.gzipBytes;
      } else if (job.state === 'failed') {
        summary.failed++;
        failures.push(job);
      } else if (job.state === 'cancelled') summary.cancelled++;
    }
    if (page.length < 1000) break;
    before = page.at(-1)!.id;
  }
  summary.failures = failures
    .sort((a, b) => a.id - b.id)
    .slice(0, 5)
    .map((job) => ({ jobId: job.id, path: (job.payload as { path?: string }).path ?? '?', message: job.errors.at(-1)?.message ?? 'failed' }));
  const manifest = await baton.getJob(plan.manifestJobId);
  summary.manifest.itemsDone = manifest.checkpoint === null ? 0 : manifestItemsDone(manifest.checkpoint);
  if (manifest.state === 'completed') {
    const r = manifest.result as unknown as ManifestResult;
    summary.manifest.file = r.file;
    summary.manifest.entries = r.entries;
  } else {
    // The entries in the JSONL file (the job's progress is throttled and lags behind):
    // at least the items its checkpoint records, plus those written after it.
    const written = await readEntries(plan.manifestJsonl).catch(() => []);
    summary.manifest.entries = Math.max(written.length, summary.manifest.itemsDone);
    status.manifest.current = Math.max(status.manifest.current, summary.manifest.entries);
  }
  return summary;
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
