import type { Job } from './types.js';

/**
 * What a job is doing, as users read it: the stored state, refined by the views of
 * SPEC "Jobs" — `delayed` (queued, first attempt not yet due), `retrying` (queued
 * after a failed attempt), `cancelling` (running with a cancel request).
 */
export type JobView = Job['state'] | 'delayed' | 'retrying' | 'cancelling';

/** The view of `job` at `now` (ms since the epoch). */
export function jobView(job: Pick<Job, 'state' | 'runAt' | 'attempt' | 'cancelRequestedAt'>, now: number): JobView {
  if (job.state === 'queued') {
    if (job.attempt > 0) return 'retrying';
    return job.runAt.getTime() > now ? 'delayed' : 'queued';
  }
  if (job.state === 'running' && job.cancelRequestedAt !== null) return 'cancelling';
  return job.state;
}
