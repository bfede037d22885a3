import type { Store } from '../store/store.js';
import type { JobRun } from '../worker/executor.js';
import { applyCancelRequests } from './apply-cancel-requests.js';

/**
 * The cancel poll: reads the stored cancel requests of the given runs (one cheap
 * `jobCancelRequests` read) and aborts each requested run with a CancelledError.
 * Runs already aborted are skipped; nothing is read when none is left. The worker
 * runs it every `cancelPollInterval` and whenever its change watch sees a write
 * that does not name a job (SQLite's watch never does; PostgreSQL's NOTIFY of a
 * cancel names it and is applied without this read).
 * @returns how many runs were newly aborted
 * @throws StoreError when the database cannot be reached (op "jobCancelRequests")
 */
export async function pollCancelRequests(store: Store, runs: JobRun[]): Promise<number> {
  const live = runs.filter((run) => !run.aborted);
  if (live.length === 0) return 0;
  return applyCancelRequests(live, await store.jobCancelRequests({ ids: live.map((run) => run.job.id) }));
}
