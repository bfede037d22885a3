import type { Logger } from 'pino';
import type { ClaimedJob } from '../job/types.js';
import { describeWait } from '../workflow/waits.js';
import type { TypedEmitter } from './events.js';
import type { WorkerEvents } from '../worker/events.js';

/**
 * How one run of a job ended, as its outcome line names it: `failed` when the job
 * failed for good, `retry scheduled` when the attempt failed and another follows,
 * `released` (handed back at shutdown), `snoozed` and `waiting` (suspended on a durable
 * wait: `ctx.sleep`, `ctx.receive`) with the attempt not counted.
 */
export type JobOutcome = 'completed' | 'failed' | 'retry scheduled' | 'cancelled' | 'released' | 'snoozed' | 'waiting';

/**
 * Logs the one line of each job outcome of a worker, fed from its events
 * (`job:completed`, `job:failed`, `job:cancelled`, `job:released`, `job:snoozed`, `job:waiting`):
 * message `greet job 12 attempt 1: completed (34 ms)`, fields `outcome` (a
 * {@link JobOutcome}), `task`, `jobId`, `attempt`, `durationMs` (the handler's start,
 * `job:started`, to the outcome in ms, rounded: a job claimed ahead of a free slot
 * does not count its wait; null, and no "(… ms)", when the handler had not started:
 * a job claimed ahead that ended while it waited, or one started before this was
 * called), and per outcome `retryAt` (retry scheduled), `reason` (cancelled, when one
 * was given), `delayMs` and `runAt` (snoozed), `abandoned` (released while its
 * handler had not returned), `wait` (waiting: `{ kind, until, topic? }`; the line ends
 * with what it waits for: `sleeps until <ISO>`, `waits for a message on "<topic>" until <ISO>`
 * or `… with no deadline`).
 *
 * A failed attempt (`failed`, `retry scheduled`) is one line at warn that ends with
 * the error's message and carries it as `error`; its stack is logged by the run at
 * debug only. Every other outcome is one line at info.
 * A lease lost to another worker is no outcome of this worker's: no line. Orphaned steps
 * (`job:steps-orphaned`) get no line here: the run itself warns of them, once.
 * @param now - the worker's clock, ms
 * @param options.completed - false: no line for a completed job (`baton worker --quiet`) @defaultValue true
 */
export function logJobOutcomes(
  events: Pick<TypedEmitter<WorkerEvents>, 'on'>,
  logger: Logger,
  now: () => number,
  options: { completed?: boolean } = {},
): void {
  const startedAt = new WeakMap<ClaimedJob, number>();
  const line = (job: ClaimedJob, outcome: JobOutcome, extra: Record<string, unknown> = {}, error?: string, detail?: string) => {
    const started = startedAt.get(job);
    startedAt.delete(job);
    // Nothing built for a level not written (a silent or warn-level logger, a busy drain).
    if (!logger.isLevelEnabled(error === undefined ? 'info' : 'warn')) return;
    const durationMs = started === undefined ? null : Math.round(now() - started);
    const fields = { outcome, task: job.task, jobId: job.id, attempt: job.attempt, durationMs, ...extra };
    const text = `${job.task} job ${job.id} attempt ${job.attempt}: ${outcome}${durationMs === null ? '' : ` (${durationMs} ms)`}${detail === undefined ? '' : `: ${detail}`}`;
    // One line, even for an error message that spans several.
    if (error === undefined) logger.info(fields, text);
    else logger.warn({ ...fields, error }, `${text}: ${error.replace(/\s*\n\s*/g, ' ')}`);
  };
  events.on('job:started', ({ job }) => void startedAt.set(job, now()));
  events.on('job:completed', ({ job }) => (options.completed === false ? void startedAt.delete(job) : line(job, 'completed')));
  events.on('job:failed', ({ job, retryAt, message }) => (retryAt === null ? line(job, 'failed', {}, message) : line(job, 'retry scheduled', { retryAt }, message)));
  events.on('job:cancelled', ({ job, reason }) => line(job, 'cancelled', reason === null ? {} : { reason }));
  events.on('job:released', ({ job, abandoned }) => line(job, 'released', abandoned ? { abandoned } : {}));
  events.on('job:snoozed', ({ job, delayMs, runAt }) => line(job, 'snoozed', { delayMs, runAt }));
  events.on('job:waiting', ({ job, wait }) => line(job, 'waiting', { wait }, undefined, describeWait(wait)));
}
