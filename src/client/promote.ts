import { NotFoundError } from '../errors.js';
import { describeWait } from '../workflow/waits.js';
import type { Job } from '../job/types.js';
import type { ClientDeps } from './deps.js';
import { knownJobId } from './query.js';

/** What `promote` answers. */
export interface PromoteResult {
  /**
   * `promoted`: it was queued with a runAt in the future (delayed, awaiting a retry,
   * snoozed) and is now due; `unchanged`: it was not waiting for a later time — queued
   * and already due, running, or finished — and nothing changed.
   */
  outcome: 'promoted' | 'unchanged';
  /** The job after the call; when `unchanged`, its `state` (and `runAt`) say why. */
  job: Job;
}

/**
 * Runs a waiting job now, as BullMQ's `job.promote()`: a queued job whose runAt is in
 * the future (delayed, awaiting a retry, snoozed) becomes due now, ahead of the jobs of
 * its priority due later, and idle workers (of every process) claim it at once. Its
 * attempts, checkpoint and payload are unchanged; the timeline records "promoted".
 * Any other job is left as it is (`unchanged`); calling it twice is harmless.
 * @throws NotFoundError when no job has that id (or `id` is not a positive integer)
 */
export async function promote(deps: ClientDeps, id: number): Promise<PromoteResult> {
  const answer = await deps.store.jobPromote({ id: knownJobId(id), now: deps.clock.now() });
  if (!answer) throw new NotFoundError(`no job with id ${id}`);
  if (answer.promoted) deps.events.emit('job:promoted', { job: answer.job });
  return { outcome: answer.promoted ? 'promoted' : 'unchanged', job: answer.job };
}

/** Why a job was not promoted, for the HTTP and CLI answers: "job 7 is running; …". */
export function notPromotedMessage(job: Job, now: number): string {
  if (job.state === 'queued' && job.wait) return `job ${job.id} is waiting: it ${describeWait(job.wait)}; promoted, it would only suspend again (send its message, or cancel it)`;
  const why = job.state === 'queued' && job.runAt.getTime() <= now ? 'queued and already due' : job.state;
  return `job ${job.id} is ${why}; only a queued job waiting for a later runAt (delayed, retrying or snoozed) can be promoted`;
}
