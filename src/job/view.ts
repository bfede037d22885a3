import type { Job } from './types.js';

/**
 * What a job is doing, as users read it: the stored state, refined by the views of
 * SPEC "Jobs" — `delayed` (queued, first attempt not yet due), `retrying` (queued
 * after a failed attempt), `cancelling` (running with a cancel request), `waiting`
 * (queued by a run that suspended on a durable wait: `ctx.sleep`, `ctx.receive`; see `job.wait`).
 */
export type JobView = Job['state'] | 'delayed' | 'retrying' | 'cancelling' | 'waiting';

/** The view of `job` at `now` (ms since the epoch). */
export function jobView(job: Pick<Job, 'state' | 'runAt' | 'attempt' | 'cancelRequestedAt'> & { wait?: Job['wait'] }, now: number): JobView {
  if (job.state === 'queued') {
    if (job.wait) return 'waiting';
    if (job.attempt > 0) return 'retrying';
    return job.runAt.getTime() > now ? 'delayed' : 'queued';
  }
  if (job.state === 'running' && job.cancelRequestedAt !== null) return 'cancelling';
  return job.state;
}
