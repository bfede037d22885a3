import { applyCancelRequests } from '../cancellation/apply-cancel-requests.js';
import { heldRuns, type WorkerState } from './state.js';

/**
 * One heartbeat: a single `leaseExtendMany` statement renews every held lease,
 * then lost leases abort their runs (LeaseLostError) and stored cancel requests
 * abort theirs (CancelledError). When the statement fails (database down), runs
 * whose lease has expired by this worker's clock are aborted as lost.
 */
export async function heartbeat(state: WorkerState): Promise<void> {
  const runs = heldRuns(state);
  if (runs.length === 0) return;
  const now = state.clock.now();
  let report;
  try {
    report = await state.store.leaseExtendMany({
      owner: state.options.workerId,
      leases: runs.map((run) => ({ id: run.job.id, token: run.job.leaseToken })),
      leaseMs: state.options.leaseTtl,
      now,
    });
  } catch (error) {
    // The database cannot be reached: a lease that has run out by our own clock may
    // already belong to another worker, so its run must stop (SPEC: lease lost).
    const at = state.clock.now();
    for (const run of runs) if (run.leaseExpiresAt <= at) run.leaseLost();
    throw error;
  }
  const lost = new Set(report.lost);
  for (const run of runs) {
    if (lost.has(run.job.id)) run.leaseLost();
    else run.leaseExpiresAt = now + state.options.leaseTtl;
  }
  applyCancelRequests(runs, report.cancelRequested);
}

/** Reads the cancel flags of the held runs (cheap, frequent) and applies them. */
export async function pollCancelRequests(state: WorkerState): Promise<void> {
  const runs = heldRuns(state).filter((run) => !run.aborted);
  if (runs.length === 0) return;
  applyCancelRequests(runs, await state.store.jobCancelRequests({ ids: runs.map((run) => run.job.id) }));
}

/** Settles jobs whose lease expired anywhere (crashed or frozen workers). */
export async function rescueExpired(state: WorkerState): Promise<void> {
  const report = await state.store.jobRescueExpired({ now: state.clock.now() });
  const total = report.requeued.length + report.failed.length + report.cancelled.length;
  if (total > 0) state.logger.warn(report, 'rescued jobs whose lease expired');
}
