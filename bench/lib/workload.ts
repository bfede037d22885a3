import type { BenchDriver } from './drivers.js';

/** A goal from the issue a figure is compared with. */
export interface Target {
  /** `>=`: the figure must reach it; `<`: stay below it. */
  op: '>=' | '<';
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

/** What a workload gets from the runner. */
export interface WorkloadContext {
  driver: BenchDriver;
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
  run(ctx: WorkloadContext): Promise<WorkloadResult>;
}

/** Whether `value` meets `target`; undefined without a target or a value. */
export function meets(value: number, target: Target | undefined): boolean | undefined {
  if (!target || !Number.isFinite(value)) return target ? false : undefined;
  return target.op === '>=' ? value >= target.value : value < target.value;
}
