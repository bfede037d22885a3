import * as z from 'zod';
import { NotFoundError } from '../errors.js';
import { jobTimeline, type TimelineEntry } from '../job/timeline.js';
import { TERMINAL_STATES, type Job } from '../job/types.js';
import type { StoreOperation } from '../store/store.js';
import { parseInput } from '../validation.js';
import type { ClientDeps } from './deps.js';
import { knownJobId } from './query.js';

/** One state of a followed job: the job and its whole story, as `getJobTimeline` reads them. */
export interface JobSnapshot {
  job: Job;
  /** Oldest first; see TimelineEntry. */
  timeline: TimelineEntry[];
}

/** Options of `followJob`. */
export interface FollowOptions {
  /** Ends the following: the iteration returns (no error) once it aborts. */
  signal?: AbortSignal;
  /**
   * The poll, ms (1..2147483647): the job is read again at least this often, whatever
   * reported a change, so changes no notification reports (on PostgreSQL, another
   * process's claim, progress or completion) are seen within it. @defaultValue 500
   */
  intervalMs?: number;
}

/** {@link FollowOptions.intervalMs}' default, ms: the period `GET /api/events` reads queue counts at. */
export const FOLLOW_INTERVAL_MS = 500;

/**
 * The least time between two reads of a followed job, ms: however many changes are
 * reported (every commit of a busy database may be one), a follower reads its job at
 * most this often (and at most every `intervalMs` when that is shorter).
 */
export const FOLLOW_MIN_GAP_MS = 100;

/**
 * The store operations that may change a job: when this process runs one, its
 * followers read their job again (the store's change watch sees other processes'
 * commits, not this connection's own). An operation missing here is still seen by
 * the poll.
 */
export const JOB_WRITE_OPS: ReadonlySet<StoreOperation> = new Set<StoreOperation>([
  'jobInsertMany', 'jobClaim', 'jobCompleteMany', 'jobCompleteAndClaim', 'jobFail', 'jobFinishCancelled', 'jobRelease', 'jobSuspend',
  'jobCheckpoint', 'jobProgress', 'leaseExtendMany', 'jobRescueExpired', 'jobCancel', 'jobRetry', 'jobPromote', 'jobDelete', 'jobRetryMany',
  'jobCancelMany', 'jobDeleteFinished', 'jobDeleteFinishedBeyond', 'scheduleAdvance', 'scheduleTrigger', 'jobMessageSend', 'jobStepSave', 'jobMessageTake', 'jobEnqueueChildren', 'jobStepsOrphaned',
]);

const optionsSchema = z.strictObject({
  signal: z.instanceof(AbortSignal, { message: 'must be an AbortSignal' }).optional(),
  intervalMs: z.number().int().min(1).max(2_147_483_647).optional(),
});

/**
 * Follows one job as it changes: yields its snapshot at once, then a new one each time
 * the job or its timeline changed (the payload, which never changes, is not compared),
 * and returns after yielding one in a terminal state (completed, failed, cancelled): a
 * job retried after that is followed by a new call. It reads the job again when this
 * process writes to a job (any of {@link JOB_WRITE_OPS}), when the store reports another
 * process's commit (`watchChanges`: SQLite's WAL watch; PostgreSQL's NOTIFY of a job
 * made due or a cancel request), and every `intervalMs` whatever happened; at most
 * every {@link FOLLOW_MIN_GAP_MS} ms. A snapshot equal to the last one yielded is not
 * yielded. Changes between two reads fold into one snapshot: a progress that moved
 * twice yields its latest value.
 *
 * Errors (the iteration rejects): ValidationError for bad options; NotFoundError when
 * no job has the id (at the first `next()`), or when the job is deleted while followed
 * (pruned, `jobs.delete`); StoreError when a read fails (a reader may follow again).
 * Ending the iteration early (`break`, `return()`, the signal) stops every wake-up.
 */
export async function* followJob(deps: ClientDeps, id: number, options: FollowOptions = {}): AsyncGenerator<JobSnapshot, void, undefined> {
  const jobId = knownJobId(id);
  const { signal, intervalMs = FOLLOW_INTERVAL_MS } = parseInput(optionsSchema, options, 'invalid follow options');
  const gapMs = Math.min(FOLLOW_MIN_GAP_MS, intervalMs);
  const waker = new Waker();
  // Subscribed before the first read, so no change between the read and the wait is missed.
  const offs = [deps.onLocalWrite(waker.mark), deps.store.watchChanges({ intervalMs, listener: waker.mark })];
  try {
    let last: string | undefined;
    for (;;) {
      waker.clear();
      const readAt = performance.now();
      const record = await deps.store.jobTimeline({ id: jobId });
      if (signal?.aborted) return;
      if (!record) throw new NotFoundError(last === undefined ? `no job with id ${jobId}` : `job ${jobId} was deleted while followed`);
      const snapshot = { job: record.job, timeline: jobTimeline(record) };
      const seen = fingerprint(snapshot);
      if (seen !== last) {
        last = seen;
        yield snapshot;
      }
      if (TERMINAL_STATES.includes(record.job.state)) return;
      await waker.wait(readAt, gapMs, intervalMs, signal);
      if (signal?.aborted) return;
    }
  } finally {
    for (const off of offs) off();
  }
}

/** What tells two snapshots apart: everything but the payload (which never changes, and may be large). */
function fingerprint({ job, timeline }: JobSnapshot): string {
  const { payload: _payload, ...rest } = job;
  return JSON.stringify([rest, timeline]);
}

/** A flag set when something may have changed, and the wait for it between two reads. */
export class Waker {
  #marked = false;
  #onMark: (() => void) | undefined;

  /** Something may have changed. */
  readonly mark = (): void => {
    this.#marked = true;
    this.#onMark?.();
  };

  /** Forgets earlier marks (a read is about to start): only later changes count. */
  clear(): void {
    this.#marked = false;
  }

  /**
   * Resolves `intervalMs` after `since` (performance.now() ms), or `gapMs` after it once
   * marked (at once when that time has passed), or as soon as `signal` aborts.
   */
  wait(since: number, gapMs: number, intervalMs: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        this.#onMark = undefined;
        signal?.removeEventListener('abort', done);
        resolve();
      };
      if (signal?.aborted) return done();
      signal?.addEventListener('abort', done, { once: true });
      const until = (ms: number) => {
        clearTimeout(timer);
        timer = setTimeout(done, Math.max(0, since + ms - performance.now()));
      };
      this.#onMark = () => until(gapMs);
      until(this.#marked ? gapMs : intervalMs);
    });
  }
}
