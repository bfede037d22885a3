import type { Job } from '../job/types.js';
import type { LockWait } from '../store/sqlite/busy.js';
import type { Worker } from '../worker/worker.js';

/** Client events, emitted by `createBaton()`'s client in this process (`baton.on`). */
export interface ClientEvents {
  /** A job this client inserted (a `key` already held by a job returns that job, without this event). */
  'job:enqueued': { job: Job };
  /** `baton.worker()` made a worker (not started yet): lets metrics subscribe to its events. */
  'worker:created': { worker: Worker };
  /** A paused queue was resumed by this client (`baton.queues.resume`): this process's workers claim at once. */
  'queue:resumed': { queue: string };
  /** A waiting job made due now by this client (`baton.promote`): this process's workers claim at once. */
  'job:promoted': { job: Job };
  /**
   * SQLite: a store operation of this process has waited over a second for the write
   * lock another process holds (`phase: 'long'`), or such a wait ended (`'ended'`).
   */
  'store:lock-wait': LockWait;
  /** One batch of `baton.jobs.retryMany` went back to queued (ids ascending): this process's workers claim at once. */
  'jobs:retried': { ids: number[] };
  /** A message this client sent (`baton.send`) was stored: this process's workers claim at once (it may have woken a suspended job). */
  'job:message': { jobId: number; topic: string };
}
