import { NotFoundError } from '../errors.js';
import type { Job } from '../job/types.js';
import type { CancelOutcome } from '../store/store.js';
import type { ClientDeps } from './deps.js';
import { knownJobId } from './query.js';

/** What `cancel` answers. */
export interface CancelResult {
  /** `cancelled`: queued → cancelled now; `requested`: running, the worker will abort it; `unchanged`: already terminal. */
  outcome: CancelOutcome;
  /** The job after the call; when `unchanged`, its `state` says which terminal state it is in. */
  job: Job;
}

/**
 * Cancels a job from any process. queued → cancelled at once; running → the request
 * is stored and reaches the worker holding the lease (which aborts the handler's
 * signal with CancelledError); terminal → no change. Calling it twice is harmless.
 * @param reason - free text passed to the handler as `CancelledError.reason`
 * @throws NotFoundError when no job has that id (or `id` is not a positive integer)
 */
export async function cancel(deps: ClientDeps, id: number, reason: string | null = null): Promise<CancelResult> {
  const answer = await deps.store.jobCancel({ id: knownJobId(id), reason, now: deps.clock.now() });
  if (!answer) throw new NotFoundError(`no job with id ${id}`);
  return answer;
}
