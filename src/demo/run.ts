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
import type { Baton } from '../baton.js';
import type { JobState } from '../job/types.js';
import type { StopSummary } from '../worker/events.js';
import type { Worker } from '../worker/worker.js';
import { DemoError, type DemoPlan } from './plan.js';
import { HASH_TASK, createDemoTasks, manifestItemsDone, readEntries, type HashResult, type ManifestResult } from './tasks.js';


/** Lease of the demo's worker, ms: short, so after a crash (kill -9) the next run takes its jobs over within seconds. */
export const DEMO_LEASE_TTL = 10_000;

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
  /** Called when the manifest job replays a step from storage instead of running it again (a resumed run). */
  onStepReplayed?: (step: string) => void;
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
  worker.on('job:step', (e) => {
    if (e.outcome === 'replayed' && e.job.id === plan.manifestJobId) options.onStepReplayed?.(e.step);
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
  const failures: number[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await baton.listJobs({ queue: plan.queue, task: HASH_TASK, limit: 1000, ...(before === undefined ? {} : { before }) });
    for (const job of page) {
      if (job.state === 'completed') {
        // Lists carry previews: a result too long for one (a long path) is read whole.
        const preview = job.resultPreview;
        const r = (preview && !preview.truncated ? JSON.parse(preview.text) : (await baton.getJob(job.id)).result) as HashResult;
        summary.completed++;
        summary.bytes += r.bytes;
        summary.gzipBytes += r.gzipBytes;
      } else if (job.state === 'failed') {
        summary.failed++;
        failures.push(job.id);
      } else if (job.state === 'cancelled') summary.cancelled++;
    }
    if (page.length < 1000) break;
    before = page.at(-1)!.id;
  }
  const firstFailures = await Promise.all(failures.sort((a, b) => a - b).slice(0, 5).map((id) => baton.getJob(id)));
  summary.failures = firstFailures.map((job) => ({ jobId: job.id, path: (job.payload as { path?: string }).path ?? '?', message: job.errors.at(-1)?.message ?? 'failed' }));
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
