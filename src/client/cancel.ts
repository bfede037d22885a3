import { NotFoundError, ValidationError } from '../errors.js';
import { stringProblems } from '../job/payload.js';
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
 * @param reason - free text passed to the handler as `CancelledError.reason`; at most {@link MAX_REASON} characters, no NUL or lone surrogate (the payload's string rule)
 * @throws NotFoundError when no job has that id (or `id` is not a positive integer);
 *   ValidationError (path `["reason"]`) for a reason that is not such a string, before anything is written
 */
export async function cancel(deps: ClientDeps, id: number, reason: string | null = null): Promise<CancelResult> {
  checkReason(reason);
  const answer = await deps.store.jobCancel({ id: knownJobId(id), reason, now: deps.clock.now() });
  if (!answer) throw new NotFoundError(`no job with id ${id}`);
  return answer;
}

/** The longest cancel reason, in characters: the HTTP body's limit. */
export const MAX_REASON = 10_000;

function checkReason(reason: unknown): void {
  if (reason === null || reason === undefined) return;
  const problems = typeof reason !== 'string' ? ['must be a string or null'] : [...stringProblems(reason, 'reason'), ...(reason.length > MAX_REASON ? [`at most ${MAX_REASON} characters (got ${reason.length})`] : [])];
  if (problems.length > 0) throw new ValidationError('invalid cancel reason', problems.map((message) => ({ path: ['reason'], message })));
}
