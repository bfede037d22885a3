import type { Context } from 'hono';
import type { TimelineEntry } from '../job/timeline.js';
import { PREVIEW_CHARS, type Job, type Preview } from '../job/types.js';
import { jobView, type JobView } from '../job/view.js';
import { HttpError } from './problem.js';

/** What {@link jobJson} reads of a job: a Job, or the JobSummary of a list. */
type Viewable = Pick<Job, 'state' | 'runAt' | 'attempt' | 'cancelRequestedAt'>;

/** A job as the API answers it: the Job (or list JobSummary) fields (Dates become ISO strings in JSON) plus its `view`. */
export type JobJson<T extends Viewable = Job> = T & { view: JobView };

/** Adds the view; `now` in ms since the epoch. */
export function jobJson<T extends Viewable>(job: T, now: number): JobJson<T> {
  return { ...job, view: jobView(job, now) };
}

/** The values {@link jobDetailJson} embeds whole only when small, and `GET /api/jobs/:id/<value>` downloads whole. */
export const JOB_VALUES = ['payload', 'result', 'checkpoint'] as const;

/**
 * The largest value (its JSON text, bytes) `GET /api/jobs/:id` embeds whole: 64 KiB, what the
 * dashboard shows on a job's page; a larger one comes as a Preview (the download route has it whole).
 */
export const INLINE_VALUE_BYTES = 64 * 1024;

/**
 * The largest body, bytes, the app builds for a list page or a job (`GET /api/jobs`,
 * `GET /api/jobs/:id`) unless `responseLimit` says otherwise: 4 MiB. A page of 1000 jobs is
 * about 1 MB (values as previews); a job's answer holds at most 3 × {@link INLINE_VALUE_BYTES}
 * of values, so only thousands of long errors or timeline entries come near it. (A value
 * download is the stored value, at most the payload limit of the process that stored it.)
 */
export const DEFAULT_RESPONSE_LIMIT = 4 * 1024 * 1024;

/**
 * A job as `GET /api/jobs/:id` answers it: {@link jobJson} plus its `timeline` and, for each of
 * payload, result and checkpoint, `<name>Preview`: null when the value is there whole; when its
 * JSON text is over {@link INLINE_VALUE_BYTES}, a {@link Preview} (as lists carry), and the value
 * itself is null (`GET /api/jobs/:id/<name>` has it whole). So a job of three 1 MiB values
 * answers in kilobytes, not megabytes. Every key is always there, so a stream of changed keys
 * (`GET /api/events?job=ID`) never leaves a stale one behind.
 */
export function jobDetailJson(job: Job, timeline: TimelineEntry[], now: number): Record<string, unknown> {
  const detail: Record<string, unknown> = { ...jobJson(job, now), timeline };
  for (const field of JOB_VALUES) {
    const text = JSON.stringify(job[field] ?? null);
    const bytes = Buffer.byteLength(text, 'utf8');
    const large = bytes > INLINE_VALUE_BYTES;
    if (large) detail[field] = null;
    detail[`${field}Preview`] = large ? previewOf(text, bytes) : null;
  }
  return detail;
}

/** The first PREVIEW_CHARS code points of `text` (`bytes` long), as lists preview values. */
function previewOf(text: string, bytes: number): Preview {
  const head = Array.from(text.slice(0, 2 * PREVIEW_CHARS)).slice(0, PREVIEW_CHARS).join('');
  return { text: head, bytes, truncated: head.length < text.length };
}

/**
 * Answers `text` (JSON) when it is at most `limit` bytes, else a 413 `response_too_large`
 * naming `what` and `hint` (what to ask instead): job lists and a job's answer go through it,
 * so neither is larger than the app's `responseLimit` whatever the jobs hold.
 * @throws HttpError response_too_large (413)
 */
export function boundedJson(c: Context, text: string, limit: number, what: string, hint: string, status: 200 | 201 = 200): Response {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: the exact count only when it may matter.
  const bytes = text.length * 3 <= limit ? text.length : Buffer.byteLength(text, 'utf8');
  if (bytes > limit) throw new HttpError('response_too_large', `${what} would be ${bytes} bytes, over this server's response limit of ${limit} bytes: ${hint}`);
  return c.body(text, status, { 'Content-Type': 'application/json' });
}
