import type { Logger } from 'pino';
import type { ClaimedJob } from '../job/types.js';
import type { Worker } from '../worker/worker.js';

/**
 * How one run of a job ended, as its outcome line names it: `failed` when the job
 * failed for good, `retry scheduled` when the attempt failed and another follows,
 * `released` (handed back at shutdown) and `snoozed` with the attempt not counted.
 */
export type JobOutcome = 'completed' | 'failed' | 'retry scheduled' | 'cancelled' | 'released' | 'snoozed';

/**
 * Logs one line at info for each job outcome of `worker`, fed from its events
 * (`job:completed`, `job:failed`, `job:cancelled`, `job:released`, `job:snoozed`):
 * message `greet job 12 attempt 1: completed (34 ms)`, fields `outcome` (a
 * {@link JobOutcome}), `task`, `jobId`, `attempt`, `durationMs` (the handler's start,
 * `job:started`, to the outcome in ms, rounded: a job claimed ahead of a free slot
 * does not count its wait; null, and no "(… ms)", when the handler had not started:
 * a job claimed ahead that ended while it waited, or one started before this was
 * called), and per outcome
 * `retryAt` (retry scheduled), `reason` (cancelled, when one was given), `delayMs` and
 * `runAt` (snoozed), `abandoned` (released while its handler had not returned).
 * A lease lost to another worker is no outcome of this worker's: no line.
 * @param now - monotonic clock in ms @defaultValue performance.now
 * @returns a function that stops logging
 */
export function logJobOutcomes(worker: Pick<Worker, 'on'>, logger: Logger, now: () => number = () => performance.now()): () => void {
  const startedAt = new WeakMap<ClaimedJob, number>();
  const line = (job: ClaimedJob, outcome: JobOutcome, extra: Record<string, unknown> = {}) => {
    const started = startedAt.get(job);
    startedAt.delete(job);
    const durationMs = started === undefined ? null : Math.round(now() - started);
    logger.info(
      { outcome, task: job.task, jobId: job.id, attempt: job.attempt, durationMs, ...extra },
      `${job.task} job ${job.id} attempt ${job.attempt}: ${outcome}${durationMs === null ? '' : ` (${durationMs} ms)`}`,
    );
  };
  const offs = [
    worker.on('job:started', ({ job }) => void startedAt.set(job, now())),
    worker.on('job:completed', ({ job }) => line(job, 'completed')),
    worker.on('job:failed', ({ job, retryAt }) => (retryAt === null ? line(job, 'failed') : line(job, 'retry scheduled', { retryAt }))),
    worker.on('job:cancelled', ({ job, reason }) => line(job, 'cancelled', reason === null ? {} : { reason })),
    worker.on('job:released', ({ job, abandoned }) => line(job, 'released', abandoned ? { abandoned } : {})),
    worker.on('job:snoozed', ({ job, delayMs, runAt }) => line(job, 'snoozed', { delayMs, runAt })),
  ];
  return () => offs.forEach((off) => off());
}
