/**
 * The handler side of the soak's ledger: {@link recorded} wraps a handler so that it keeps
 * the handler contract of docs/reliability.md ("The ledger") by construction — `run-start`
 * first, `run-end` last with the outcome read from the signal, and every write, step,
 * receive and child enqueue made through a {@link RecordedRun} that records it and marks
 * its value with the run's token.
 */
import { CancelledError, LeaseLostError, ShutdownError, SnoozeError, TimeoutError, WaitSuspension, type AnyTask, type ChildJob, type ChildOptions, type JobContext, type Json } from 'baton-jobs';
import type { AbortKind, RunOutcome, WriteRef } from './ledger-events.js';
import type { LedgerWriter } from './ledger.js';
import { progressMessage, withRef } from './write-ref.js';

/** Why a signal aborted, as the ledger names it; undefined for a reason Baton does not give. */
export function abortKind(reason: unknown): AbortKind | undefined {
  if (reason instanceof CancelledError) return 'cancelled';
  if (reason instanceof ShutdownError) return 'shutdown';
  if (reason instanceof TimeoutError) return 'timeout';
  if (reason instanceof LeaseLostError) return 'lease-lost';
  return undefined;
}

/** What one run of a recorded handler writes through. Every method records in the ledger as the contract says. */
export class RecordedRun {
  #seq = 0;
  readonly #receives = new Map<string, number>();
  #children = 0;

  /** @param ctx - the run's context (its waits and other calls stay reachable as `run.ctx`) */
  constructor(readonly ctx: JobContext, private readonly ledger: LedgerWriter) {}

  /** The job's id. */
  get jobId(): number {
    return this.ctx.job.id;
  }

  /** This run's lease (fencing) token: with the job id, the run's name in the ledger. */
  get token(): number {
    return this.ctx.job.leaseToken;
  }

  /** The next write's reference, recorded as a `write` of `what` before the caller makes it. */
  #write(what: 'progress' | 'checkpoint' | 'result'): WriteRef {
    const ref = { token: this.token, seq: ++this.#seq };
    this.ledger.record({ kind: 'write', jobId: this.jobId, what, ref });
    return ref;
  }

  /** Saves `value` as the checkpoint, marked with this write's reference. @throws as `ctx.saveCheckpoint` */
  checkpoint(value: { [key: string]: Json } = {}): Promise<void> {
    return this.ctx.saveCheckpoint(withRef(this.#write('checkpoint'), value));
  }

  /** Reports progress `current`/`total`, its message carrying this write's reference. */
  progress(current: number, total?: number): void {
    this.ctx.progress(current, total, progressMessage(this.#write('progress')));
  }

  /** The value to return as the job's result, marked with this write's reference (recorded now: the completion follows the return). */
  result(value: { [key: string]: Json } = {}): { [key: string]: Json } {
    return withRef(this.#write('result'), value);
  }

  /**
   * `ctx.step(name, fn)` recording `step-start` and `step-end` around `fn` in this run, and
   * `step-result` with the run whose `fn` produced the result it returns.
   * @returns what `fn` returned, in this run or (replayed) in an earlier one
   */
  async step<T extends Json>(name: string, fn: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
    const base = { jobId: this.jobId, token: this.token, step: name };
    const stored = await this.ctx.step(name, async (signal) => {
      this.ledger.record({ kind: 'step-start', ...base });
      const value = await fn(signal);
      this.ledger.record({ kind: 'step-end', ...base });
      return { from: this.token, value } as { from: number; value: Json };
    });
    this.ledger.record({ kind: 'step-result', ...base, from: stored.from });
    return stored.value as T;
  }

  /**
   * `ctx.receive(topic)` (no timeout), recording which message the n-th receive on `topic`
   * returned; a message is `{ messageId, … }` as the soak's sender sends it.
   */
  async receive(topic: string): Promise<{ messageId: string } & { [key: string]: Json }> {
    const occurrence = (this.#receives.get(topic) ?? 0) + 1;
    this.#receives.set(topic, occurrence);
    const message = await this.ctx.receive<{ messageId: string } & { [key: string]: Json }>(topic);
    this.ledger.record({ kind: 'message-received', jobId: this.jobId, token: this.token, topic, occurrence, messageId: message?.messageId ?? null });
    return message!;
  }

  /** `ctx.enqueueChild`, recording the child it returned under the call's position in the run (`child#1`, …). */
  async enqueueChild(task: AnyTask | string, payload?: Json, options?: ChildOptions): Promise<ChildJob> {
    const step = `child#${++this.#children}`;
    const child = (await this.ctx.enqueueChild(task as string, payload, options)) as ChildJob;
    this.ledger.record({ kind: 'child-enqueued', jobId: this.jobId, token: this.token, step, childId: child.id });
    return child;
  }
}

/**
 * Wraps `handler` to record its run in `ledger`: `run-start` before it, `run-end` after it
 * with the outcome — `suspended` for a wait or snooze, `aborted` (with the reason) whenever
 * the signal had aborted, else `returned` or `threw`. The handler's return or throw passes through.
 * @param worker - the worker's name, as the ledger shows it
 */
export function recorded<P>(ledger: LedgerWriter, worker: string, handler: (payload: P, run: RecordedRun) => Promise<Json>): (payload: P, ctx: JobContext) => Promise<Json> {
  return async (payload, ctx) => {
    const { job } = ctx;
    const seen = ctx.checkpoint !== null && typeof ctx.checkpoint === 'object' && !Array.isArray(ctx.checkpoint) ? ctx.checkpoint.ref : null;
    ledger.record({
      kind: 'run-start',
      jobId: job.id,
      attempt: job.attempt,
      token: job.leaseToken,
      worker,
      claimedAt: job.startedAt?.getTime() ?? Date.now(),
      queue: job.queue,
      key: job.concurrencyKey,
      checkpointSeen: (seen as WriteRef | null | undefined) ?? null,
    });
    const end = (outcome: RunOutcome, error?: unknown) => {
      const reason = ctx.signal.aborted && outcome !== 'suspended' ? abortKind(ctx.signal.reason) : undefined;
      ledger.record({
        kind: 'run-end',
        jobId: job.id,
        attempt: job.attempt,
        token: job.leaseToken,
        outcome: ctx.signal.aborted && outcome !== 'suspended' ? 'aborted' : outcome,
        ...(reason ? { reason } : {}),
        ...(error instanceof Error ? { error: error.message } : {}),
      });
    };
    try {
      const result = await handler(payload, new RecordedRun(ctx, ledger));
      end('returned');
      return result;
    } catch (error) {
      end(error instanceof WaitSuspension || error instanceof SnoozeError ? 'suspended' : 'threw', error);
      throw error;
    }
  };
}
