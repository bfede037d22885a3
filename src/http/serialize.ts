import type { Job } from '../job/types.js';
import { jobView, type JobView } from '../job/view.js';

/** A job as the API answers it: the Job fields (Dates become ISO strings in JSON) plus its `view`. */
export type JobJson = Job & { view: JobView };

/** Adds the view; `now` in ms since the epoch. */
export function jobJson(job: Job, now: number): JobJson {
  return { ...job, view: jobView(job, now) };
}
