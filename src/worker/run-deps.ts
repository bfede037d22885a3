import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { TypedEmitter } from '../observe/events.js';
import type { Tracing } from '../observe/tracing.js';
import type { Store } from '../store/store.js';
import type { Completer } from './completer.js';
import type { HandlerClient } from './context.js';
import type { WorkerEvents } from './events.js';
import type { Suspender } from './suspender.js';

/** What a run needs from its worker. */
export interface ExecutorDeps {
  store: Store;
  /** Batches completions into one write per event-loop turn. */
  completer: Completer;
  /** Writes the suspensions of one turn's runs on durable waits together (jobSuspend). */
  suspender: Suspender;
  clock: Clock;
  logger: Logger;
  events: TypedEmitter<WorkerEvents>;
  workerId: string;
  /** A `process <task>` span per run (observe/tracing.ts). */
  tracing: Tracing;
  /** `ctx.baton`, and the checks and announcement of `ctx.enqueueOnComplete`'s follow-ups. */
  client: HandlerClient;
  payloadLimit: number;
  progressInterval: number;
  abortGrace: number;
  cancelGrace: number;
  /**
   * When the worker's stop gives up on writes about jobs (ms since the epoch, by
   * `clock`); Infinity until a stop begins. Outcome writes retry through a database
   * outage until this or the lease's end, whichever comes first.
   */
  stopDeadline: () => number;
}
