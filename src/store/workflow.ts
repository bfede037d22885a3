import type { Job } from '../job/types.js';
import type { NewJob } from './types.js';

/**
 * The store operations of durable execution (issue 32): a job's step log and its
 * mailbox. Part of the {@link Store} interface (which extends this one), kept apart
 * so the interface reads by concern. Internal, like Store.
 *
 * Conventions as Store's: one params object, `now` in ms since the epoch from
 * `Store.clock`, JSON values as text already checked by `serializeJson`, and every
 * write about a running job fenced by `(id, token)`.
 */
export interface WorkflowStore {
  /**
   * Fenced: suspends running jobs on their durable waits (`ctx.sleep`, `ctx.receive`,
   * awaited children), in one transaction (one commit for every run that suspended in
   * the same event-loop turn). Each job goes back to `queued` with its attempt not
   * counted, `wait` stored (its view is then `waiting`) and a `waiting` timeline event,
   * due at `runAt` (the wait's end), or at once when it waits for a message on a topic
   * with a pending message (sent while it ran) or for children that have all ended or of
   * which one failed or was cancelled. PostgreSQL: the rows are locked by a statement of
   * their own first, so a send or a child's end that held one is seen. A job with a
   * cancel request ends `cancelled` instead. The next end of an attempt clears `wait`.
   * @param params.items - `wait`: the StoredWait's JSON text `{ kind, until (ms), topic?, ids? }`; `runAt`: ms since the epoch
   * @returns ids suspended or cancelled (leases lost meanwhile are left out)
   */
  jobSuspend(params: { items: SuspendItem[]; now: number }): Promise<number[]>;

  /**
   * A job's step log (migration 22), in `seq` order: what a run loads, in one query,
   * before its first step, and what the API shows. [] for a job with no steps or no such job.
   */
  jobStepList(params: { id: number }): Promise<StepRecord[]>;

  /**
   * Fenced: stores (inserts, or replaces by name) one step of job `id` while it is
   * `running` under `token`, in one statement. PostgreSQL: the job row is read FOR
   * SHARE in that statement, so a rescue or takeover committing meanwhile is waited
   * for and then refuses the write; SQLite: one write transaction.
   * @returns false when the lease was lost (nothing written)
   */
  jobStepSave(params: { id: number; token: number; step: StepRecord }): Promise<boolean>;

  /**
   * Stores a message for one job's `receive(topic)`: the job named by `id`, or the
   * queued or running job holding `key`. With an `idempotencyKey` already used for that
   * job and topic, nothing is stored and the first message is returned (`created`
   * false). A queued job that waits for a message on `topic` (a suspended `receive`) is
   * made due now in the same transaction, and workers of other processes are woken
   * (PostgreSQL: NOTIFY `<schema>_jobs` at commit; SQLite: their change watch).
   * PostgreSQL: the job row is locked FOR UPDATE, so a release suspending it either
   * commits first (and this send wakes it) or sees this message (and does not wait).
   * @returns the job's id, the message's id, and whether this call stored it
   * @throws NotFoundError when no job has this id, or no queued or running job this key
   * @throws ConflictError when the job has finished (completed, failed, cancelled): no receive will ever take it
   */
  jobMessageSend(params: { target: MessageTarget; topic: string; payload: string; idempotencyKey: string | null; now: number }): Promise<SentMessage>;

  /**
   * Fenced, for `receive(topic)` at step identity `step` of job `id` running under
   * `token`, in one transaction: takes the oldest pending message on `topic` (marked
   * taken by `step`) and stores the step `completed` with the message's payload as its
   * result; or, when none is pending, stores the step `waiting` with `until` as its
   * deadline unless it is stored already (the first receive's deadline holds across
   * suspensions) and returns that deadline.
   * @param params.until - the receive's deadline, ms since the epoch (NEVER: none)
   * @returns `{ payload }` (JSON text) when a message was taken; `{ until }` when none
   *   was pending; false when the lease was lost (nothing taken)
   */
  jobMessageTake(params: { id: number; token: number; topic: string; step: string; seq: number; attempt: number; until: number; now: number }): Promise<{ payload: string } | { until: number } | false>;

  /**
   * Fenced, for `ctx.enqueueChild` calls of job `id` running under `token`, in one
   * transaction (one commit for a whole fan-out): for each item, when its step is stored,
   * that step's child id (a replay enqueues nothing); else its `child` inserted with
   * `parent_id` = id and `parent_step` = step (migration 24), and the step stored
   * `completed` with the child's id as its result. So a child exists exactly when its step
   * does, whatever crashes. The new children are inserted in item order, in one statement.
   * @param params.children - 1..1000 items with distinct steps; each child checked and serialized as an enqueue does, without `key`
   * @returns per item, in order: the child's id, and the child as inserted when this call inserted it (null on a replay); false when the lease was lost (nothing written)
   */
  jobEnqueueChildren(params: { id: number; token: number; attempt: number; children: ChildInsert[]; now: number }): Promise<Array<{ childId: number; inserted: Job | null }> | false>;

  /**
   * Fenced: appends a `stepsOrphaned` event naming `steps` (completed steps this run never
   * reached) to the timeline of job `id` running under `token`; one statement, made only
   * when a completing run has orphans.
   * @returns false when the lease was lost (nothing written)
   */
  jobStepsOrphaned(params: { id: number; token: number; steps: string[]; now: number }): Promise<boolean>;

  /**
   * Registers `owner` (a process awaiting results) as listening for jobs that finish, until
   * now + `ttlMs` (renew before it expires). PostgreSQL: while any registration is live,
   * every end of a job sends NOTIFY `<prefix>_done` naming the ids (migration 23), which
   * {@link Store.watchChanges} reports as `{ finished }`. SQLite: nothing to do (its change
   * watch sees every commit); no I/O.
   */
  finishedListen(params: { owner: string; ttlMs: number; now: number }): Promise<void>;

  /** Ends `owner`'s registration (PostgreSQL); a no-op when it has none, and on SQLite. */
  finishedUnlisten(params: { owner: string }): Promise<void>;

  /** The children of job `id` (`parent_id`), by id; [] when none. One read. */
  jobChildren(params: { id: number }): Promise<ChildRecord[]>;
}

/** One child of {@link WorkflowStore.jobEnqueueChildren}: its step identity and place in the log, and the job. */
export interface ChildInsert {
  step: string;
  seq: number;
  child: NewJob;
}

/** A child job as its parent reads it (`jobChildren`). */
export interface ChildRecord {
  id: number;
  task: string;
  state: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
  /** JSON text of its result when completed, else null. */
  result: string | null;
  /** Its last error's message when failed; its cancel reason when cancelled; else null. */
  error: string | null;
}

/** One stored step of a job (`job_steps`, migration 22). Times in ms since the epoch. */
export interface StepRecord {
  /** The step's identity: its name, then `#2`, `#3`… for later calls of one name in a run. */
  name: string;
  /** Its place in the log: the order in which the job's steps first ran, from 1. */
  seq: number;
  /** `completed` (result stored), `failed` (its last try threw; a retry runs it again), `waiting` (a receive holding its deadline). */
  state: 'completed' | 'failed' | 'waiting';
  /** The job's attempt that wrote it. */
  attempt: number;
  /** Tries of the step inside that attempt (its own `maxAttempts`). */
  tries: number;
  startedAt: number;
  /** null while `waiting`. */
  finishedAt: number | null;
  /** JSON text: the result (`completed`), the deadline in ms (`waiting`), else null. */
  result: string | null;
  /** The last try's error message (`failed`), else null. */
  error: string | null;
}

/** Whom `jobMessageSend` sends to: a job by id, or the queued or running job holding a key. */
export type MessageTarget = { id: number } | { key: string };

/** What `jobMessageSend` did. */
export interface SentMessage {
  jobId: number;
  messageId: number;
  /** False when the idempotency key was used before: the first message stands. */
  created: boolean;
}

/** One run suspending on a durable wait: its lease, when it is due, and what it waits for (see WorkflowStore.jobSuspend). */
export interface SuspendItem {
  id: number;
  token: number;
  /** The wait's end, ms since the epoch. */
  runAt: number;
  /** The StoredWait's JSON text. */
  wait: string;
}
