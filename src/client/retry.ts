import * as z from 'zod';
import { ConflictError, NotFoundError } from '../errors.js';
import type { Job } from '../job/types.js';
import { parseInput } from '../validation.js';
import type { ClientDeps } from './deps.js';
import { knownJobId } from './query.js';

/** Options of `retry`. */
export interface RetryOptions {
  /**
   * Start from scratch: clear the job's checkpoint and progress (its result is
   * cleared by every retry), so the handler sees `ctx.checkpoint === null`. Without
   * it the job resumes from the checkpoint its last run saved. The timeline says
   * which ("retried by hand from scratch").
   * @defaultValue false
   */
  fresh?: boolean;
}

const retryOptions = z.strictObject({ fresh: z.boolean().optional() });

/**
 * Runs a failed or cancelled job again: back to queued now with attempt 0; its
 * error history is kept. By default its checkpoint and progress are kept too, so the
 * handler resumes where the last run stopped; `{ fresh: true }` clears them.
 * @throws NotFoundError for an unknown id; ConflictError when the job is queued,
 *   running or completed (the message names its state); ValidationError (path
 *   `["fresh"]`) for options that are not `{ fresh?: boolean }`, before anything is written
 */
export async function retry(deps: ClientDeps, id: number, options: RetryOptions = {}): Promise<Job> {
  const { fresh = false } = parseInput(retryOptions, options, 'invalid retry options', { subject: 'options' });
  const answer = await deps.store.jobRetry({ id: knownJobId(id), now: deps.clock.now(), fresh });
  if (!answer) throw new NotFoundError(`no job with id ${id}`);
  if (!answer.retried) throw new ConflictError(`job ${id} is ${answer.job.state}; only failed or cancelled jobs can be retried`, answer.job.state);
  deps.events.emit('job:enqueued', { job: answer.job });
  return answer.job;
}
