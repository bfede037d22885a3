import type { BenchDriver } from './drivers.js';

/** A goal from the issue a figure is compared with. */
export interface Target {
  /** `>=`: the figure must reach it; `<`: stay below it; `<=`: not exceed it. */
  op: '>=' | '<' | '<=';
  value: number;
  /** As printed, e.g. "≥ 10,000 jobs/s". */
  text: string;
}

/** One printed figure. */
export interface Figure {
  /** The workload row label, e.g. "2. drain". */
  workload: string;
  /** What is measured, e.g. "drain, concurrency 10". */
  name: string;
  /** The number compared with the target (and stored in the results file). */
  value: number;
  unit: string;
  /** As printed, e.g. "p50 0.41 / p99 1.9 ms"; defaults to value + unit. */
  text?: string;
  target?: Target;
  /** Anything else worth keeping in the results file (samples summary, settings). */
  detail?: Record<string, unknown>;
}

/** How much each workload does (`--tiny` runs the harness on a few jobs; its figures mean nothing). */
export interface BenchSizes {
  /** Enqueue: jobs by enqueueMany, its batch, and one-by-one enqueue calls. */
  bulk: number;
  batch: number;
  single: number;
  /** Drain: queued no-op jobs per drain. */
  drain: number;
  /** Start latency: measured jobs and warm-up jobs. */
  latencyCount: number;
  latencyWarmup: number;
  /** Cancel: measured trials and warm-up trials. */
  cancelTrials: number;
  cancelWarmup: number;
  /** Hand-off: trials. */
  handoffTrials: number;
  /** Backlog: jobs not due (another queue, or delayed) in the baseline case and in the large case, and the due jobs drained. */
  backlogSmall: number;
  backlogLarge: number;
  backlogDrain: number;
  /** Many running: jobs one worker holds at once, and the heartbeat interval (ms) the store calls are counted over 4 of. */
  manyRunning: number;
  manyRunningHeartbeatMs: number;
  /** History (opt-in): rounds, and jobs enqueued then drained per round. */
  historyRounds: number;
  historyJobs: number;
  /** Drains of `historyJobs` before round 1, not counted, whose finished jobs are then removed. */
  historyWarmUps: number;
  /** Flow control: jobs per drain, distinct concurrency keys, jobs queued for the claim latency, claims measured. */
  flowDrain: number;
  flowKeys: number;
  flowClaimJobs: number;
  flowClaims: number;
  /** Rounds of the three flow drains (unlimited, keyed, queue limit), interleaved; shares compare medians. */
  flowRounds: number;
  /** Start-up: worker processes started one after another (after one uncounted warm-up). */
  startupRuns: number;
}

export const FULL_SIZES: BenchSizes = {
  bulk: 20_000,
  batch: 1_000,
  single: 2_000,
  drain: 20_000,
  latencyCount: 300,
  latencyWarmup: 20,
  cancelTrials: 20,
  cancelWarmup: 2,
  handoffTrials: 5,
  backlogSmall: 10_000,
  backlogLarge: 1_000_000,
  backlogDrain: 20_000,
  manyRunning: 2_000,
  manyRunningHeartbeatMs: 1_000,
  historyRounds: Number(process.env.BATON_BENCH_HISTORY_ROUNDS) || 50,
  historyJobs: 100_000,
  historyWarmUps: 10,
  flowDrain: 20_000,
  flowKeys: 10_000,
  flowClaimJobs: 100_000,
  flowClaims: 300,
  flowRounds: 5,
  startupRuns: 20,
};

/** A few hundred jobs and a few trials: checks that the bench runs, measures nothing. */
export const TINY_SIZES: BenchSizes = {
  bulk: 300,
  batch: 100,
  single: 30,
  drain: 300,
  latencyCount: 20,
  latencyWarmup: 2,
  cancelTrials: 3,
  cancelWarmup: 1,
  handoffTrials: 2,
  backlogSmall: 100,
  backlogLarge: 2_000,
  backlogDrain: 200,
  manyRunning: 50,
  manyRunningHeartbeatMs: 250,
  historyRounds: 2,
  historyJobs: 300,
  historyWarmUps: 1,
  flowDrain: 300,
  flowKeys: 150,
  flowClaimJobs: 600,
  flowClaims: 10,
  flowRounds: 1,
  startupRuns: 3,
};

/** What a workload gets from the runner. */
export interface WorkloadContext {
  driver: BenchDriver;
  /** How much to do. */
  sizes: BenchSizes;
  /**
   * A fresh, empty database URL for this workload. Dropped by the runner when the
   * workload ends (children are killed first).
   */
  database(label: string): Promise<string>;
  /** Registers cleanup (e.g. removing a bundle) run when the workload ends, or on Ctrl-C. */
  onCleanup(fn: () => void | Promise<void>): void;
  /** When set, the drain's workers write a CPU profile of the drain here (`<label>.cpuprofile`). */
  profileDir: string | undefined;
  /** A progress line on stderr (the table goes to stdout). */
  log(message: string): void;
}

/** What a workload returns. */
export interface WorkloadResult {
  figures: Figure[];
  /** Settings used, printed under the table (e.g. "drainTimeout 0 ms"). */
  settings: string[];
}

/** A benchmark. `name` is what `--only` takes. */
export interface Workload {
  name: string;
  /** One line describing what it measures. */
  title: string;
  /**
   * A long workload (minutes to hours at full size) that runs only when `--only`
   * names it; the default run and `--tiny` without `--only` leave it out.
   */
  optIn?: boolean;
  run(ctx: WorkloadContext): Promise<WorkloadResult>;
}

/** Whether `value` meets `target`; undefined without a target or a value. */
export function meets(value: number, target: Target | undefined): boolean | undefined {
  if (!target || !Number.isFinite(value)) return target ? false : undefined;
  if (target.op === '>=') return value >= target.value;
  return target.op === '<=' ? value <= target.value : value < target.value;
}
