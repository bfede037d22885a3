import { CancelledError } from '../errors.js';
import type { CancelRequest } from '../store/store.js';
import type { JobRun } from '../worker/executor.js';

/**
 * Aborts the signal of every held run that has a stored cancel request, with a
 * CancelledError carrying the request's reason. Runs already aborted are left as
 * they are (the first reason wins).
 * @returns how many runs were newly aborted
 */
export function applyCancelRequests(runs: Iterable<JobRun>, requests: CancelRequest[]): number {
  if (requests.length === 0) return 0;
  const byId = new Map(requests.map((r) => [r.id, r]));
  let count = 0;
  for (const run of runs) {
    const request = byId.get(run.job.id);
    if (!request || !run.holding || run.aborted) continue;
    run.abort(new CancelledError(request.reason));
    count++;
  }
  return count;
}
