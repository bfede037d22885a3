/**
 * What the soak checker reads and what it reports (check-soak.ts decides; the
 * check-*.ts modules each decide a group of invariants).
 */
import type { Job } from 'baton-jobs';
import type { FaultKind, LedgerEntry } from './ledger-events.js';

/** A job's final row as the checker needs it (from `getJob`: `allFullJobs` in test/helpers/client.ts reads them all). */
export type FinalJob = Pick<Job, 'id' | 'task' | 'queue' | 'state' | 'attempt' | 'maxAttempts' | 'errors' | 'result' | 'checkpoint' | 'progress' | 'parentId' | 'wait' | 'cancelReason'>;

/** A recurring schedule of the soak: a tick every `everyMs`; ticks due within [`from`, `to`] (ms) must each run exactly once. */
export interface ScheduleWindow {
  name: string;
  everyMs: number;
  from: number;
  to: number;
}

/** A rate limit the soak set: at most `limit` claims in any `periodMs` of a queue's jobs, or of one concurrency key's. */
export interface RateLimitRule {
  scope: 'queue' | 'key';
  name: string;
  limit: number;
  periodMs: number;
}

/** Everything the checker decides from. */
export interface SoakCheckInput {
  /** The ledger, as `readLedger` returns it. */
  entries: readonly LedgerEntry[];
  /** Baton's final rows of every job (`allFullJobs`). */
  jobs: readonly FinalJob[];
  /** The schedules whose ticks must each have run once. @defaultValue [] */
  schedules?: readonly ScheduleWindow[];
  /** The rate limits to verify. @defaultValue [] */
  rateLimits?: readonly RateLimitRule[];
  /** A `cancelReason` Baton sets itself that explains a cancelled job without a cancel in the ledger (a concurrency-key strategy's). @defaultValue none */
  explainedCancelReason?: RegExp;
  /**
   * The fleet workers' drain timeout plus abort grace, ms: a handler still running that long
   * after its worker's SIGTERM is abandoned by design (its job handed back), so a run of the
   * job beside it is no overlap. @defaultValue none: a SIGTERM never explains an overlap
   */
  abandonAfterMs?: number;
  /** A freeze of any process stalls every process (SQLite's one write lock): see `HistoryOptions` in history.ts. @defaultValue false */
  freezeStallsAll?: boolean;
  /** An error message that fails a job at once (a non-retryable error the fleet throws on purpose). @defaultValue none */
  nonRetryableError?: RegExp;
}

/** The invariants of issue 34, item 4, one name each. */
export type InvariantName =
  /** Every enqueued job ends terminal, in the state its history explains. */
  | 'terminal'
  /** A job ran again only when the nemesis hit its holder. */
  | 'rerun'
  /** Two runs of one job never overlapped, except across a lease loss. */
  | 'overlap'
  /** No write of a stale run (progress, checkpoint, step result, result) was accepted. */
  | 'stale-write'
  /** A completed step never ran again; a step has one result. */
  | 'step-once'
  /** Every message was received exactly once, by the job it was sent to. */
  | 'message-once'
  /** Every child was enqueued once. */
  | 'child-once'
  /** No parent waited for a child that had already ended. */
  | 'child-wait'
  /** Every cancel of a non-terminal job ended `cancelled`, and no cancelled job ran again. */
  | 'cancel'
  /** Every schedule tick in the window ran exactly once. */
  | 'tick-once'
  /** Service runs never overlapped, except across a lease loss. */
  | 'service-overlap'
  /** The lock's fencing store never accepted a token lower than one it had accepted. */
  | 'lock-monotonic'
  /** Never more running per queue or key than allowed, never more claims per window than a rate limit. */
  | 'limit';

/** One broken invariant. */
export interface Violation {
  invariant: InvariantName;
  /** The job concerned, when one is. */
  jobId?: number;
  /** What else it concerns (a step, a message, a schedule tick, a service, a lock, a limit). */
  subject?: string;
  /** Why it is a violation, with the evidence (tokens, pids, times). */
  why: string;
}

/** The checker's answer. */
export interface SoakReport {
  counts: {
    jobs: number;
    /** Final rows per state. */
    byState: Record<string, number>;
    runs: number;
    events: number;
    stepsRun: number;
    messagesSent: number;
    messagesReceived: number;
    children: number;
    cancels: number;
    ticks: number;
    serviceRuns: number;
    lockWrites: number;
    /** Writes the fencing store refused: stale holders stopped. */
    lockRefusals: number;
    limitSamples: number;
  };
  /** Faults the nemesis injected, by kind. */
  faults: Record<FaultKind, number>;
  reRuns: {
    /** Runs after a run that did not hand the job back by design, explained by the fault that hit the holder. */
    explained: Record<FaultKind, number>;
    /** Runs after a failed attempt (a throw or a timeout): retries, not re-runs. */
    retries: number;
    /** Runs after a durable wait or a snooze handed the job back. */
    continuations: number;
    /** Runs after a run whose lease ran out while another process was frozen (only with `freezeStallsAll`): the database stalled for every process. */
    stalls: number;
  };
  /** Broken invariants: the soak passes when there are none. */
  violations: Violation[];
}
