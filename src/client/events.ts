import type { Job } from '../job/types.js';
import type { Worker } from '../worker/worker.js';

/** Client events, emitted by `createBaton()`'s client in this process (`baton.on`). */
export interface ClientEvents {
  /** A job this client inserted (a `key` already held by a job returns that job, without this event). */
  'job:enqueued': { job: Job };
  /** `baton.worker()` made a worker (not started yet): lets metrics subscribe to its events. */
  'worker:created': { worker: Worker };
}
