import * as z from 'zod';
import { NotFoundError } from '../errors.js';
import { jobTimeline, type TimelineEntry } from '../job/timeline.js';
import { JOB_STATES, type Job, type JobSummary } from '../job/types.js';
import type { JobFilter, QueueCount } from '../store/store.js';
import { parseInput, queueNameSchema, storableString } from '../validation.js';
import type { ClientDeps } from './deps.js';

/**
 * Reads one job.
 * @throws NotFoundError when no job has that id
 */
export async function getJob(deps: ClientDeps, id: number): Promise<Job> {
  const job = await deps.store.jobGet({ id: knownJobId(id) });
  if (!job) throw new NotFoundError(`no job with id ${id}`);
  return job;
}

/**
 * Reads one job with its whole story (see TimelineEntry), oldest first: every
 * attempt's start and worker, releases at shutdown, snoozes, rescues after a lease
 * expired, retries scheduled, cancel requests and who asked, manual retries and the
 * outcome. From stored data, in one read, so any process sees the same story.
 * @throws NotFoundError when no job has that id
 */
export async function getJobTimeline(deps: ClientDeps, id: number): Promise<{ job: Job; timeline: TimelineEntry[] }> {
  const record = await deps.store.jobTimeline({ id: knownJobId(id) });
  if (!record) throw new NotFoundError(`no job with id ${id}`);
  return { job: record.job, timeline: jobTimeline(record) };
}

/**
 * `id` when it can name a job (a positive safe integer, as the database assigns);
 * anything else names no job, on every driver alike (PostgreSQL would otherwise
 * refuse `'abc'` or `1e30` as a bigint with a StoreError).
 * @throws NotFoundError for any other value
 */
export function knownJobId(id: unknown): number {
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
    // A string id ("1") is named as the string it is, with the rule: "no job with id 1" would be wrong when job 1 exists.
    const shown = typeof id === 'number' ? String(id) : typeof id === 'string' ? JSON.stringify(id) : `of type ${typeof id}`;
    throw new NotFoundError(`no job with id ${shown} (job ids are positive integers)`);
  }
  return id;
}

/** Filter and page of `listJobs`. `limit` 1..1000 @defaultValue 50; `before` = id cursor (exclusive). */
export interface ListOptions extends JobFilter {
  limit?: number;
  before?: number;
}

const listSchema = z.object({
  state: z.enum(JOB_STATES).optional(),
  queue: queueNameSchema.optional(),
  task: storableString().optional(),
  limit: z.number().int().min(1).max(1000).optional(),
  before: z.number().int().positive().optional(),
});

/**
 * Lists jobs newest first, as summaries: payload, result, checkpoint and the last
 * error's message come as previews (their first PREVIEW_CHARS characters and their size
 * in bytes, see Preview), so a page stays small whatever the jobs carry; `getJob` gives
 * the whole values.
 * @throws ValidationError for an unknown state, a bad limit or cursor, or a queue or task
 *   filter with NUL or a lone UTF-16 surrogate (no job can carry one)
 */
export async function listJobs(deps: ClientDeps, options: ListOptions = {}): Promise<JobSummary[]> {
  const { limit = 50, before, ...filter } = parseInput(listSchema, options, 'invalid list options');
  return deps.store.jobList({ ...filter, limit, ...(before === undefined ? {} : { beforeId: before }) });
}

/** Job counts per queue and state, optionally only queues starting with `queuePrefix`. */
export async function queueCounts(deps: ClientDeps, queuePrefix?: string): Promise<QueueCount[]> {
  return deps.store.queueCounts(queuePrefix === undefined ? {} : { queuePrefix });
}
