import type { AnyTask, InputOf, PayloadOf, ResultOf } from '../job/task.js';
import type { TimelineEntry } from '../job/timeline.js';
import type { EnqueueOptions, Job, JobSummary, Json, TransactionClient } from '../job/types.js';
import type { QueueCount } from '../store/store.js';
import type { CancelOptions, CancelResult } from './cancel.js';
import type { SendOptions, SendResult, SendTarget } from './send.js';
import type { WaitOptions } from './wait-result.js';
import type { JobStep } from './steps.js';
import type { EnqueueItem } from './enqueue.js';
import type { FollowOptions, JobSnapshot } from './follow.js';
import type { PromoteResult } from './promote.js';
import type { ListOptions } from './query.js';
import type { RetryOptions } from './retry.js';

/**
 * The arguments after the task in {@link Client.enqueue}: for a task object its
 * payload (the schema's input, required) then the options; for a task name an
 * optional payload of any JSON then the options. One signature rather than two
 * overloads, so a payload field of the wrong type is reported at that field
 * ("Type 'number' is not assignable to type 'string'", the expected type coming
 * from the payload's property), not as "the last overload" refusing a Task for a string.
 */
export type EnqueueRest<T extends AnyTask | string> = T extends AnyTask ? [payload: InputOf<T>, options?: EnqueueOptions] : [payload?: unknown, options?: EnqueueOptions];

/**
 * The job operations of a Baton: what `createBaton` returns has them all (a Baton is a
 * Client), and a handler has the same ones as `ctx.baton` (the Baton its worker was
 * made by), so it needs no second `createBaton`.
 */
export interface Client {
  /**
   * Enqueues one job. With a task object the payload is typed and checked against
   * its schema (the payload type is the schema's input: fields with a default may be
   * left out; the stored payload is the schema's output); with a name, against the
   * task of that name among `tasks` (when given).
   * @returns the job; with a `key` held by a non-terminal job, that job instead
   * @throws ValidationError (bad payload, options, non-JSON, NUL, too large: nothing written); NotFoundError (unknown task name)
   */
  enqueue<T extends AnyTask | string>(task: T, ...rest: EnqueueRest<T>): Promise<T extends AnyTask ? Job<PayloadOf<T>, ResultOf<T>> : Job>;
  /**
   * Enqueues several jobs in one transaction (one statement on PostgreSQL): all or
   * none. With `{ client }`, inside the caller's own transaction (see EnqueueOptions.client).
   */
  enqueueMany(items: EnqueueItem[], options?: { client?: TransactionClient }): Promise<Job[]>;
  /** Cancels from any process; see {@link CancelResult}; `options.by` names who asks in the job's timeline (default "api"). @throws NotFoundError, ValidationError */
  cancel(id: number, reason?: string, options?: CancelOptions): Promise<CancelResult>;
  /**
   * Runs a failed or cancelled job again, resuming from its checkpoint; `{ fresh: true }`
   * clears checkpoint and progress first (from scratch). @throws NotFoundError, ConflictError, ValidationError
   */
  retry(id: number, options?: RetryOptions): Promise<Job>;
  /** Runs a delayed, retrying or snoozed job now; see {@link PromoteResult}. @throws NotFoundError */
  promote(id: number): Promise<PromoteResult>;
  /** @throws NotFoundError */
  getJob(id: number): Promise<Job>;
  /** The job with its whole story, oldest first (see TimelineEntry), from stored data. @throws NotFoundError */
  getJobTimeline(id: number): Promise<{ job: Job; timeline: TimelineEntry[] }>;
  /** The job's step log (`ctx.step`, waits, children), in the order its steps first ran; see client/steps.ts. @throws NotFoundError */
  getJobSteps(id: number): Promise<JobStep[]>;
  /**
   * Follows one job from any process: its snapshot (job and timeline) at once, then one
   * each time it changed, ending after a terminal one. See client/follow.ts for what
   * wakes it and how often it reads.
   * ```ts
   * for await (const { job, timeline } of baton.followJob(id)) console.log(job.state, job.progress, timeline.at(-1)?.summary);
   * ```
   * @throws (the iteration rejects with) NotFoundError (no such job; deleted while followed), ValidationError (options), StoreError
   */
  followJob(id: number, options?: FollowOptions): AsyncGenerator<JobSnapshot, void, undefined>;
  /**
   * Sends a message to a job's `ctx.receive(topic)` (a job id, or `{ key }`): stored,
   * delivered exactly once, kept when sent before the receive; see client/send.ts.
   * @throws ValidationError, NotFoundError, ConflictError (the job has finished)
   */
  send(target: SendTarget, topic: string, payload: Json, options?: SendOptions): Promise<SendResult>;
  /**
   * Awaits a job's end from any process: its result once completed; see client/wait-result.ts.
   * @throws JobFailedError, JobCancelledError, WaitTimeoutError (`timeout` ms), the signal's reason, NotFoundError, ValidationError
   */
  waitForResult<R = Json>(id: number, options?: WaitOptions): Promise<R>;
  listJobs(options?: ListOptions): Promise<JobSummary[]>;
  queueCounts(queuePrefix?: string): Promise<QueueCount[]>;
}
