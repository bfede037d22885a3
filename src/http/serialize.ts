import type { Job } from '../job/types.js';
import { jobView, type JobView } from '../job/view.js';

/** What {@link jobJson} reads of a job: a Job, or the JobSummary of a list. */
type Viewable = Pick<Job, 'state' | 'runAt' | 'attempt' | 'cancelRequestedAt'>;

/** A job as the API answers it: the Job (or list JobSummary) fields (Dates become ISO strings in JSON) plus its `view`. */
export type JobJson<T extends Viewable = Job> = T & { view: JobView };

/** Adds the view; `now` in ms since the epoch. */
export function jobJson<T extends Viewable>(job: T, now: number): JobJson<T> {
  return { ...job, view: jobView(job, now) };
}
