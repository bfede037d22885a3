/**
 * What the soak's external ledger holds: one typed event per thing that happened, written
 * by the soak's handlers, producer, canceller, lock sections, limit sampler and nemesis
 * (docs/reliability.md, "The ledger"). The checker (check-soak.ts) decides every invariant
 * of issue 34 from these events and Baton's final job rows alone.
 *
 * Conventions for every event:
 * - `jobId` is Baton's job id; `token` is the run's lease (fencing) token, `ctx.job.leaseToken`:
 *   it changes on every claim, so `(jobId, token)` names one run.
 * - Times are ms since the epoch on the host's clock, `Date.now()` (every process runs on one
 *   host and reads the same clock; not `performance.timeOrigin + now()`, which drifts apart
 *   between processes started at different times when the clock is slewed);
 *   `claimedAt` is the database's claim time (`ctx.job.startedAt`).
 * - A write a handler attempts is recorded BEFORE the call (`write`, `step-end`), so that a
 *   write the store accepted was committed after the event's `at`.
 * - Values a handler writes carry a {@link WriteRef} (its token and a per-run sequence), so the
 *   checker can tell which write landed from the final row or from what a later run saw.
 */

/** Identifies one write of a run: the writer's lease token and its sequence number within the run (1, 2, …). */
export interface WriteRef {
  token: number;
  seq: number;
}

/** How a run of a handler ended, as the handler wrapper saw it. */
export type RunOutcome =
  /** The handler resolved (its result is what the completion tries to store). */
  | 'returned'
  /** A durable wait (sleep, receive, children) or a snooze handed the job back by design. */
  | 'suspended'
  /** The handler threw while its signal was not aborted: a failed attempt. */
  | 'threw'
  /** The handler settled after its signal aborted; `reason` says why. */
  | 'aborted';

/** Why a run's signal aborted (Baton's four abort reasons). */
export type AbortKind = 'cancelled' | 'shutdown' | 'timeout' | 'lease-lost';

/** The faults the nemesis injects (nemesis-plan.ts). */
export type FaultKind = 'sigkill' | 'sigterm' | 'sigstop' | 'net-cut' | 'db-restart' | 'cpu-hog';

/** The faults that make a holder lose its job, and so explain a re-run of it: kill, terminate, freeze, cut-off. */
export const HOLDER_FAULTS: readonly FaultKind[] = ['sigkill', 'sigterm', 'sigstop', 'net-cut'];

/** The faults after which a stale holder may still be running: they explain two runs of one job overlapping. */
export const LEASE_LOSS_FAULTS: readonly FaultKind[] = ['sigstop', 'net-cut'];

/** One event as a writer hands it to the ledger; the ledger stamps `at` and `pid` unless given. */
export type LedgerEvent =
  /** The producer enqueued a job. */
  | { kind: 'job-enqueued'; jobId: number; task: string; queue: string; key?: string | null }
  /** A handler started: the first thing it does. `checkpointSeen` names the checkpoint write it was given (null: none). */
  | {
      kind: 'run-start';
      jobId: number;
      attempt: number;
      token: number;
      worker: string;
      claimedAt: number;
      queue: string;
      key: string | null;
      checkpointSeen: WriteRef | null;
    }
  /** A handler settled (the last thing it does, before returning or rethrowing). */
  | { kind: 'run-end'; jobId: number; attempt: number; token: number; outcome: RunOutcome; reason?: AbortKind; error?: string }
  /** A run is about to write progress, a checkpoint or its result (recorded before the call), carrying `ref`. */
  | { kind: 'write'; jobId: number; what: 'progress' | 'checkpoint' | 'result'; ref: WriteRef }
  /** A step's function started in run `token`. */
  | { kind: 'step-start'; jobId: number; token: number; step: string }
  /** A step's function returned in run `token`, before `ctx.step` saves its result. */
  | { kind: 'step-end'; jobId: number; token: number; step: string }
  /** `ctx.step` returned in run `token` with the result the function of run `from` produced (`from === token`: its own). */
  | { kind: 'step-result'; jobId: number; token: number; step: string; from: number }
  /** A message was sent to a job (`messageId`: unique per message, the send's idempotency key). */
  | { kind: 'message-sent'; jobId: number; topic: string; messageId: string }
  /** `ctx.receive` returned in run `token`: the `occurrence`-th receive on `topic` (1, 2, …); `messageId` null on timeout. */
  | { kind: 'message-received'; jobId: number; token: number; topic: string; occurrence: number; messageId: string | null }
  /** `ctx.enqueueChild` at step `step` of parent `jobId` returned `childId`. */
  | { kind: 'child-enqueued'; jobId: number; token: number; step: string; childId: number }
  /**
   * The canceller's `cancel(jobId)` returned `outcome` (Baton's CancelOutcome), with the job's
   * `state` and `startedAt` (ms; null when never claimed) from its answer: the last claim
   * before the cancel, so a later claim is told apart by the database's own time.
   */
  | { kind: 'cancel-requested'; jobId: number; outcome: 'cancelled' | 'requested' | 'unchanged'; stateSeen: string; startedAt: number | null }
  /** A schedule's job ran for tick `instant` (ms). */
  | { kind: 'tick-run'; schedule: string; instant: number; jobId: number }
  /** A service run started; `token` is its lease's fencing token. */
  | { kind: 'service-start'; service: string; token: number }
  /** A service run ended (its `run` returned or threw). */
  | { kind: 'service-end'; service: string; token: number }
  /** The fencing store (fence-store.ts) was asked to write `token` for `lock`: accepted, or refused because it had seen `highest`. */
  | { kind: 'lock-write'; lock: string; token: number; accepted: boolean; highest: number }
  /** The limit sampler saw `running` jobs under a concurrency `limit` for a queue or a concurrency key. */
  | { kind: 'limit-sample'; scope: 'queue' | 'key'; name: string; running: number; limit: number }
  /** The nemesis injected a fault over [`startedAt`, `endedAt`] (equal for a signal); `targetPid` null for database and CPU faults. */
  | { kind: 'fault'; fault: FaultKind; targetPid: number | null; startedAt: number; endedAt: number }
  /** A fleet process exited (the supervisor saw it): its runs end here at the latest. */
  | { kind: 'process-exit'; targetPid: number; code: number | null; signal: string | null };

/** An event as read back: stamped with the time, the writing process and its order in that process's file. */
export type LedgerEntry = LedgerEvent & {
  /** When it was recorded (or when the writer said it happened), ms since the epoch. */
  at: number;
  /** The process that recorded it. */
  pid: number;
  /** Its position in the writer's file, 1, 2, …: orders events of one process exactly. */
  seq: number;
};

/** The entries of one kind. */
export type EntryOf<K extends LedgerEvent['kind']> = Extract<LedgerEntry, { kind: K }>;
