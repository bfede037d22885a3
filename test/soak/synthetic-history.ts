/**
 * Synthetic soak histories for the checker's tests: a builder of ledger entries and final
 * rows, and {@link cleanHistory}, one history of every kind of thing the soak does, faults
 * included, that breaks no invariant. Each checker test breaks it in one way.
 */
import type { FinalJob, SoakCheckInput } from './check-types.js';
import type { AbortKind, FaultKind, LedgerEntry, LedgerEvent, RunOutcome } from './ledger-events.js';
import { progressMessage, withRef } from './write-ref.js';

/** Builds a history: ledger entries (stamped as given) and final rows. */
export class SyntheticHistory {
  readonly entries: LedgerEntry[] = [];
  readonly rows = new Map<number, FinalJob>();
  readonly #seq = new Map<number, number>();

  /** Records `event` at time `at` (ms) by process `pid`. */
  add(at: number, pid: number, event: LedgerEvent): this {
    const seq = (this.#seq.get(pid) ?? 0) + 1;
    this.#seq.set(pid, seq);
    this.entries.push({ ...event, at, pid, seq });
    return this;
  }

  /** A handler's start (claimed 1 ms before) with the checkpoint it was given; queue and key as given. */
  start(jobId: number, token: number, pid: number, at: number, extra: { attempt?: number; seen?: [number, number]; queue?: string; key?: string; claimedAt?: number } = {}): this {
    return this.add(at, pid, {
      kind: 'run-start',
      jobId,
      token,
      attempt: extra.attempt ?? 1,
      worker: `w${pid}`,
      claimedAt: extra.claimedAt ?? at - 1,
      queue: extra.queue ?? 'default',
      key: extra.key ?? null,
      checkpointSeen: extra.seen ? { token: extra.seen[0], seq: extra.seen[1] } : null,
    });
  }

  /** A handler's end. */
  end(jobId: number, token: number, pid: number, at: number, outcome: RunOutcome, reason?: AbortKind): this {
    return this.add(at, pid, { kind: 'run-end', jobId, attempt: 1, token, outcome, ...(reason ? { reason } : {}) });
  }

  /** A write attempt of run `token` (sequence `seq`) made at `at`. */
  write(jobId: number, what: 'progress' | 'checkpoint' | 'result', token: number, seq: number, pid: number, at: number): this {
    return this.add(at, pid, { kind: 'write', jobId, what, ref: { token, seq } });
  }

  /** A step's function run by run `token` from `at` to `at + 0.5`, and ctx.step returning its own result at `at + 1`. */
  step(jobId: number, token: number, pid: number, step: string, at: number): this {
    return this.add(at, pid, { kind: 'step-start', jobId, token, step })
      .add(at + 0.5, pid, { kind: 'step-end', jobId, token, step })
      .add(at + 1, pid, { kind: 'step-result', jobId, token, step, from: token });
  }

  /** A nemesis fault. */
  fault(fault: FaultKind, targetPid: number | null, startedAt: number, endedAt = startedAt): this {
    return this.add(endedAt, 1, { kind: 'fault', fault, targetPid, startedAt, endedAt });
  }

  /** A final row: completed with the result of write `result` ([token, seq]) unless told otherwise. */
  row(id: number, row: Partial<FinalJob> & { resultRef?: [number, number]; checkpointRef?: [number, number]; progressRef?: [number, number] } = {}): this {
    const { resultRef, checkpointRef, progressRef, ...rest } = row;
    this.rows.set(id, {
      id,
      task: 'short',
      queue: 'default',
      state: 'completed',
      attempt: 1,
      maxAttempts: 3,
      errors: [],
      result: resultRef ? withRef({ token: resultRef[0], seq: resultRef[1] }) : null,
      checkpoint: checkpointRef ? withRef({ token: checkpointRef[0], seq: checkpointRef[1] }) : null,
      progress: progressRef ? { current: 1, message: progressMessage({ token: progressRef[0], seq: progressRef[1] }) } : null,
      parentId: null,
      wait: null,
      cancelReason: null,
      ...rest,
    });
    return this;
  }

  /** A job enqueued at `at` that ran once as run `token` in `pid` over [at+1, at+3] and completed with its result. */
  simpleJob(jobId: number, token: number, pid: number, at: number, extra: { queue?: string; key?: string; claimedAt?: number } = {}): this {
    return this.add(at, 2, { kind: 'job-enqueued', jobId, task: 'short', queue: extra.queue ?? 'default', key: null })
      .start(jobId, token, pid, at + 1, extra)
      .write(jobId, 'result', token, 1, pid, at + 2)
      .end(jobId, token, pid, at + 3, 'returned')
      .row(jobId, { resultRef: [token, 1], queue: extra.queue ?? 'default' });
  }

  /** The checker's input, with the schedule and rate limit {@link cleanHistory} uses. */
  input(): SoakCheckInput {
    return {
      entries: [...this.entries].sort((a, b) => a.at - b.at || a.pid - b.pid || a.seq - b.seq),
      jobs: [...this.rows.values()],
      schedules: [{ name: 'every-second', everyMs: 1000, from: 1000, to: 3000 }],
      rateLimits: [{ scope: 'queue', name: 'rated', limit: 2, periodMs: 1000 }],
    };
  }
}

/**
 * One history of everything the soak does that breaks no invariant. Jobs:
 * 1 short; 2 five-step-like, its worker (pid 101) SIGKILLed mid-step, resumed by pid 102
 * replaying step `a`; 3 frozen holder (pid 103, SIGSTOP past its lease), taken over by
 * pid 104, the stale run's late progress refused; 4 waits for message m1; 5 parent of 6;
 * 7 cancelled while running; 8 cancelled while queued; 9 handed back on a SIGTERM;
 * 10 retried after a throw; 11 failed on its only attempt; 20–22 ticks of `every-second`;
 * 40–42 on the rate-limited queue `rated`. Beside them: two service runs in turn, lock
 * writes with one stale token refused, a limit sample, a CPU hog and a database restart.
 */
export function cleanHistory(): SyntheticHistory {
  const h = new SyntheticHistory();
  h.simpleJob(1, 1, 100, 0);

  h.add(5, 2, { kind: 'job-enqueued', jobId: 2, task: 'stepped', queue: 'default' });
  h.start(2, 1, 101, 10).step(2, 1, 101, 'a', 10.5).add(12, 101, { kind: 'step-start', jobId: 2, token: 1, step: 'b' });
  h.fault('sigkill', 101, 13).add(13.5, 3, { kind: 'process-exit', targetPid: 101, code: null, signal: 'SIGKILL' });
  h.start(2, 2, 102, 20, { attempt: 2 }).add(20.5, 102, { kind: 'step-result', jobId: 2, token: 2, step: 'a', from: 1 }).step(2, 2, 102, 'b', 21);
  h.write(2, 'checkpoint', 2, 1, 102, 23).write(2, 'result', 2, 2, 102, 24).end(2, 2, 102, 25, 'returned');
  h.row(2, { task: 'stepped', attempt: 2, resultRef: [2, 2], checkpointRef: [2, 1], errors: [{ attempt: 1, time: new Date(19), message: 'lease expired', stack: null }] });

  h.add(5, 2, { kind: 'job-enqueued', jobId: 3, task: 'checkpointing', queue: 'default' });
  h.start(3, 1, 103, 10).write(3, 'checkpoint', 1, 1, 103, 11).fault('sigstop', 103, 12, 40);
  h.start(3, 2, 104, 30, { attempt: 2, seen: [1, 1] }).write(3, 'result', 2, 1, 104, 35).end(3, 2, 104, 36, 'returned');
  h.write(3, 'progress', 1, 2, 103, 41).end(3, 1, 103, 42, 'aborted', 'lease-lost');
  h.row(3, { task: 'checkpointing', attempt: 2, resultRef: [2, 1], checkpointRef: [1, 1] });

  h.add(45, 2, { kind: 'job-enqueued', jobId: 4, task: 'receiver', queue: 'default' });
  h.start(4, 1, 100, 50).end(4, 1, 100, 51, 'suspended');
  h.add(55, 2, { kind: 'message-sent', jobId: 4, topic: 'go', messageId: 'm1' });
  h.start(4, 2, 102, 60).add(61, 102, { kind: 'message-received', jobId: 4, token: 2, topic: 'go', occurrence: 1, messageId: 'm1' });
  h.write(4, 'result', 2, 1, 102, 61.5).end(4, 2, 102, 62, 'returned').row(4, { task: 'receiver', resultRef: [2, 1] });

  h.add(65, 2, { kind: 'job-enqueued', jobId: 5, task: 'parent', queue: 'default' });
  h.start(5, 1, 100, 70).add(71, 100, { kind: 'child-enqueued', jobId: 5, token: 1, step: 'c', childId: 6 }).end(5, 1, 100, 72, 'suspended');
  h.start(6, 1, 102, 73).write(6, 'result', 1, 1, 102, 73.5).end(6, 1, 102, 74, 'returned').row(6, { resultRef: [1, 1], parentId: 5 });
  h.start(5, 2, 100, 75).add(75.5, 100, { kind: 'child-enqueued', jobId: 5, token: 2, step: 'c', childId: 6 });
  h.write(5, 'result', 2, 1, 100, 75.8).end(5, 2, 100, 76, 'returned').row(5, { task: 'parent', resultRef: [2, 1] });

  h.add(78, 2, { kind: 'job-enqueued', jobId: 7, task: 'long', queue: 'default' });
  h.start(7, 1, 100, 80).add(81, 4, { kind: 'cancel-requested', jobId: 7, outcome: 'requested', stateSeen: 'running', startedAt: 79 });
  h.end(7, 1, 100, 82, 'aborted', 'cancelled').row(7, { task: 'long', state: 'cancelled', cancelReason: 'soak' });
  h.add(85, 2, { kind: 'job-enqueued', jobId: 8, task: 'short', queue: 'default' });
  h.add(86, 4, { kind: 'cancel-requested', jobId: 8, outcome: 'cancelled', stateSeen: 'queued', startedAt: null }).row(8, { state: 'cancelled', attempt: 0, cancelReason: 'soak' });

  h.add(88, 2, { kind: 'job-enqueued', jobId: 9, task: 'long', queue: 'default' });
  h.start(9, 1, 102, 90).fault('sigterm', 102, 91).end(9, 1, 102, 92, 'aborted', 'shutdown').add(93, 3, { kind: 'process-exit', targetPid: 102, code: 0, signal: null });
  h.start(9, 2, 105, 95).write(9, 'result', 2, 1, 105, 95.5).end(9, 2, 105, 96, 'returned').row(9, { task: 'long', resultRef: [2, 1] });

  h.add(98, 2, { kind: 'job-enqueued', jobId: 10, task: 'flaky', queue: 'default' });
  h.start(10, 1, 105, 100).end(10, 1, 105, 101, 'threw').start(10, 2, 105, 102, { attempt: 2 }).write(10, 'result', 2, 1, 105, 102.5).end(10, 2, 105, 103, 'returned');
  h.row(10, { task: 'flaky', attempt: 2, resultRef: [2, 1], errors: [{ attempt: 1, time: new Date(101), message: 'flaky', stack: null }] });
  h.add(108, 2, { kind: 'job-enqueued', jobId: 11, task: 'doomed', queue: 'default' });
  h.start(11, 1, 105, 110).end(11, 1, 105, 111, 'threw');
  h.row(11, { task: 'doomed', state: 'failed', maxAttempts: 1, errors: [{ attempt: 1, time: new Date(111), message: 'doomed', stack: null }] });

  for (const [i, instant] of [1000, 2000, 3000].entries()) h.simpleJob(20 + i, 1, 105, instant).add(instant + 1.5, 105, { kind: 'tick-run', schedule: 'every-second', instant, jobId: 20 + i });

  h.simpleJob(40, 1, 105, 4000, { queue: 'rated', claimedAt: 4000 }).simpleJob(41, 1, 105, 4500, { queue: 'rated', claimedAt: 4500 }).simpleJob(42, 1, 105, 5000, { queue: 'rated', claimedAt: 5000 });

  h.add(10, 100, { kind: 'service-start', service: 'sweeper', token: 1 }).add(20, 100, { kind: 'service-end', service: 'sweeper', token: 1 });
  h.add(25, 105, { kind: 'service-start', service: 'sweeper', token: 2 }).add(30, 105, { kind: 'service-end', service: 'sweeper', token: 2 });
  h.add(10, 6, { kind: 'lock-write', lock: 'L', token: 1, accepted: true, highest: 1 }).add(20, 6, { kind: 'lock-write', lock: 'L', token: 2, accepted: true, highest: 2 });
  h.add(30, 6, { kind: 'lock-write', lock: 'L', token: 1, accepted: false, highest: 2 });
  h.add(50, 7, { kind: 'limit-sample', scope: 'key', name: 'tenant-1', running: 2, limit: 2 });
  h.fault('cpu-hog', null, 200, 210).fault('db-restart', null, 220);
  return h;
}
