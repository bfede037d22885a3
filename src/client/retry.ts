import { ConflictError, NotFoundError } from '../errors.js';
import type { Job } from '../job/types.js';
import type { ClientDeps } from './deps.js';
import { knownJobId } from './query.js';

/**
 * Runs a failed or cancelled job again: back to queued now with attempt 0; its
 * error history is kept.
 * @throws NotFoundError for an unknown id; ConflictError when the job is queued,
 *   running or completed (the message names its state)
 */
export async function retry(deps: ClientDeps, id: number): Promise<Job> {
  const answer = await deps.store.jobRetry({ id: knownJobId(id), now: deps.clock.now() });
  if (!answer) throw new NotFoundError(`no job with id ${id}`);
  if (!answer.retried) throw new ConflictError(`job ${id} is ${answer.job.state}; only failed or cancelled jobs can be retried`, answer.job.state);
  deps.events.emit('job:enqueued', { job: answer.job });
  return answer.job;
}
