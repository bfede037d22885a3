import { applyCancelRequests } from '../cancellation/apply-cancel-requests.js';
import { heldRuns, type WorkerState } from './state.js';

/**
 * One heartbeat: a single `leaseExtendMany` statement renews every held lease,
 * then lost leases abort their runs (LeaseLostError) and stored cancel requests
 * abort theirs (CancelledError). When the statement fails (database down), runs
 * whose lease has expired by this worker's clock are aborted as lost.
 * Leases other workers let expire are settled by the rescuer (maintenance/rescuer.ts).
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
