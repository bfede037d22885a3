import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { AnyTask } from '../job/task.js';
import type { TypedEmitter } from '../observe/events.js';
import type { WorkerEvents } from './events.js';
import type { Store } from '../store/store.js';
import type { ExecutorDeps } from './run-deps.js';
import type { JobRun } from './executor.js';
import type { ResolvedWorkerOptions } from './options.js';
import type { Reservations } from './slots.js';

/** The state a worker's parts (fetcher, heartbeat, shutdown) share. */
export interface WorkerState {
  readonly options: ResolvedWorkerOptions;
  readonly store: Store;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: TypedEmitter<WorkerEvents>;
  readonly tasks: Map<string, AnyTask>;
  readonly executor: ExecutorDeps;
  /** Runs not yet over: occupying a slot (abandoned handlers within their grace included) or writing their outcome. */
  readonly runs: Set<JobRun>;
  /** Room the claims in flight have reserved (slots.ts): not yet runs, already spoken for. */
  readonly reservations: Reservations;
  /** Set at step 1 of shutdown: claim nothing more. */
  stopping: boolean;
  /** When the stop gives up on writes about jobs (ms since the epoch, by `clock`); Infinity until a stop begins (see shutdown.ts). */
  stopDeadline: number;
}

/** The runs that still hold their job's lease. */
export function heldRuns(state: WorkerState): JobRun[] {
  return [...state.runs].filter((run) => run.holding);
}
