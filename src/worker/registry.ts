import { hostname } from 'node:os';
import { heldRuns, type WorkerState } from './state.js';

/**
 * The worker registry (SPEC Surfaces: the fleet is visible from any host): a
 * worker upserts its row at start and on every heartbeat tick, with an expiry of
 * now + leaseTtl, and deletes it at stop. A crashed worker's row simply expires
 * and stops being listed.
 */
export async function registerWorker(state: WorkerState, startedAt: number): Promise<void> {
  const o = state.options;
  await state.store.workerUpsert({
    worker: {
      id: o.workerId,
      host: hostname(),
      pid: process.pid,
      startedAt,
      concurrency: o.concurrency,
      queues: o.queues,
      tasks: [...state.tasks.keys()],
      running: heldRuns(state).map((run) => run.job.id),
    },
    ttlMs: o.leaseTtl,
    now: state.clock.now(),
  });
}

/** Removes the worker's row (at stop). */
export async function unregisterWorker(state: WorkerState): Promise<void> {
  await state.store.workerDelete({ id: state.options.workerId });
}
