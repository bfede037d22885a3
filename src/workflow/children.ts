import * as z from 'zod';
import { ConflictError, LeaseLostError, NonRetryableError, brand, ValidationError } from '../errors.js';
import type { EnqueueItem } from '../client/enqueue.js';
import type { AnyTask } from '../job/task.js';
import { NEVER, type EnqueueOptions, type Job, type Json } from '../job/types.js';
import type { ChildInsert, ChildRecord, NewJob } from '../store/store.js';
import { parseInput } from '../validation.js';
import type { StepLog } from './steps.js';
import type { Waits } from './waits.js';

/**
 * Child jobs (issue 32): `ctx.enqueueChild`, `ctx.waitForChildren`, a child's `result()`.
 *
 * ```
 * enqueueChild ──step "baton:child:<task>" stored──► the same child (a replay enqueues nothing)
 *      └──not stored──► child inserted with the step, in one fenced transaction
 * waitForChildren / result()
 *      ├─ a child under policy "fail" ended failed or cancelled ──► ChildFailedError (the parent fails, no retry)
 *      ├─ some still queued or running ──► the run suspends (`waiting` for them, slot freed);
 *      │     the last one's end, or a failure, wakes it in the transaction that ends the child
 *      └─ all ended ──► each child's outcome, in enqueue order
 * ```
 * A cancel of the parent cancels its unfinished children in the same transaction (store).
 */

/** What a parent does when a child fails or is cancelled. `fail`: the parent fails too (no retry); `continue`: it gets the child's outcome and decides. */
export type ChildFailurePolicy = 'fail' | 'continue';

/** Options of `ctx.enqueueChild`: an enqueue's (but `key` and `client`), and the failure policy. */
export interface ChildOptions extends Omit<EnqueueOptions, 'key' | 'client'> {
  /** @defaultValue 'fail' */
  onFailure?: ChildFailurePolicy;
}

/** A child job as its parent holds it. */
export interface ChildJob<Result = Json> {
  readonly id: number;
  readonly task: string;
  /**
   * Waits (durably: the parent's run suspends and frees its slot) for this child's end.
   * @returns its result once completed
   * @throws ChildFailedError when it failed or was cancelled (whatever the policy);
   *   ConflictError when called after the parent's run ended (use `baton.waitForResult(id)` outside a job)
   */
  result(): Promise<Result>;
}

/** One child's end, as `waitForChildren` returns it. */
export interface ChildOutcome {
  id: number;
  task: string;
  state: 'completed' | 'failed' | 'cancelled';
  /** The result when completed, else null. */
  result: Json;
  /** The last error's message (failed) or the cancel reason (cancelled); null when completed. */
  error: string | null;
}

/** A child failed or was cancelled and the parent's policy is `fail` (or it awaited that child's `result()`): the parent fails, without retry. */
export class ChildFailedError extends NonRetryableError {
  readonly child: ChildOutcome;
  constructor(child: ChildOutcome) {
    super(`child job ${child.id} (${child.task}) ${child.state}${child.error === null ? '' : `: ${child.error}`}`);
    this.child = child;
  }
}
brand(ChildFailedError, 'ChildFailedError');

/** The most children one insert writes (store.jobEnqueueChildren's bound); a larger fan-out is several transactions. */
const MAX_CHILD_BATCH = 1000;

const policySchema = z.enum(['fail', 'continue']);
const waitOptionsSchema = z.strictObject({ onFailure: policySchema.optional() });

/** What {@link Children} needs from the run. */
export interface ChildrenHost {
  steps: StepLog;
  waits: Waits;
  signal: AbortSignal;
  /** Checks and serializes the child as an enqueue does (ctx.enqueueOnComplete's check). */
  prepare(item: EnqueueItem): Promise<NewJob>;
  /** The fenced insert of children with their steps, in one transaction (store.jobEnqueueChildren); false when the lease was lost. */
  insert(children: ChildInsert[]): Promise<Array<{ childId: number; inserted: Job | null }> | false>;
  /** This job's children, one read (store.jobChildren). */
  list(): Promise<ChildRecord[]>;
  /** A child was inserted: this process's workers may claim it at once. */
  enqueued(job: Job): void;
  /** False once the handler returned or threw: a handle's `result()` refuses then. */
  active(): boolean;
}

/** The children of one run of a parent job. */
export class Children {
  readonly #host: ChildrenHost;
  /** Children enqueued or replayed by this run, in call order, with their policy. */
  readonly #mine: Array<{ id: number; task: string; onFailure: ChildFailurePolicy }> = [];
  /** Children checked and waiting for the next batched insert (enqueueChild calls made without awaiting one another). */
  #batch: Array<{ item: ChildInsert; done: (answer: { childId: number; inserted: Job | null } | false | Error) => void }> = [];

  constructor(host: ChildrenHost) {
    this.#host = host;
  }

  /**
   * `ctx.enqueueChild`: idempotent per parent and step.
   * @throws ValidationError, PayloadTooLargeError, NotFoundError (as an enqueue; `key` and `client` refused); LeaseLostError
   */
  async enqueue<R = Json>(task: AnyTask | string, payload?: unknown, options: ChildOptions = {}): Promise<ChildJob<R>> {
    const host = this.#host;
    host.waits.checkNotSuspended();
    const { onFailure, ...rest } = options ?? {};
    const policy = onFailure === undefined ? 'fail' : parseInput(policySchema, onFailure, 'invalid child options: onFailure must be "fail" or "continue"', { subject: 'options' });
    for (const refused of ['key', 'client'] as const) {
      if ((rest as EnqueueOptions)[refused] !== undefined) {
        throw new ValidationError('invalid child options', [{ path: [refused], message: `not accepted by enqueueChild: a child is identified by its parent and step${refused === 'client' ? ', and inserted in the parent\'s transaction' : ''}` }], { subject: 'options' });
      }
    }
    const taskName = typeof task === 'string' ? task : task.name;
    const id = host.steps.identity(`baton:child:${taskName}`);
    host.signal.throwIfAborted();
    const stored = await host.steps.stored(id);
    let childId: number;
    if (stored?.state === 'completed') {
      childId = Number(stored.result);
      host.steps.report({ step: id, outcome: 'replayed', durationMs: 0, tries: 0, resultBytes: Buffer.byteLength(stored.result ?? '') });
    } else {
      const seq = host.steps.seqOf(stored);
      const child = await host.prepare({ task, payload, options: rest });
      const answer = await this.#insert({ step: id, seq, child });
      if (answer instanceof Error) throw answer;
      if (answer === false) throw (host.signal.reason as Error | undefined) ?? new LeaseLostError();
      childId = answer.childId;
      if (answer.inserted) host.enqueued(answer.inserted);
      host.steps.report({ step: id, outcome: 'run', durationMs: 0, tries: 1, resultBytes: Buffer.byteLength(String(childId)) });
    }
    this.#mine.push({ id: childId, task: taskName, onFailure: policy });
    return { id: childId, task: taskName, result: () => this.#result<R>(childId) };
  }

  /**
   * Queues one child for the batched insert: the children of enqueueChild calls made in
   * one turn of the event loop (`Promise.all(items.map((i) => ctx.enqueueChild(…)))`) are
   * inserted in one transaction, one commit for the fan-out. The call order decides their
   * step identities (assigned before any await), so a replay finds each one's step.
   */
  #insert(item: ChildInsert): Promise<{ childId: number; inserted: Job | null } | false | Error> {
    return new Promise((done) => {
      this.#batch.push({ item, done });
      if (this.#batch.length > 1) return;
      setImmediate(async () => {
        const all = this.#batch;
        this.#batch = [];
        for (let start = 0; start < all.length; start += MAX_CHILD_BATCH) {
          const batch = all.slice(start, start + MAX_CHILD_BATCH);
          try {
            const answers = await this.#host.insert(batch.map((b) => b.item));
            batch.forEach((b, i) => b.done(answers === false ? false : answers[i]!));
          } catch (error) {
            batch.forEach((b) => b.done(error instanceof Error ? error : new Error(String(error))));
          }
        }
      });
    });
  }

  /**
   * `ctx.waitForChildren`: every child this run enqueued (or replayed), once all ended.
   * @param options.onFailure - overrides each child's policy for this call
   * @throws ChildFailedError (a child under policy `fail` failed or was cancelled); WaitSuspension (the run suspends: let it propagate); ValidationError (options)
   */
  async wait(options?: { onFailure?: ChildFailurePolicy }): Promise<ChildOutcome[]> {
    const o = options === undefined ? {} : parseInput(waitOptionsSchema, options, 'invalid waitForChildren options', { subject: 'options' });
    return this.#await(this.#mine.map((c) => ({ ...c, onFailure: o.onFailure ?? c.onFailure })));
  }

  async #result<R>(childId: number): Promise<R> {
    if (!this.#host.active()) throw new ConflictError(`child ${childId}: result() waits inside its parent's run, which has ended; outside a job use baton.waitForResult(${childId})`);
    const mine = this.#mine.find((c) => c.id === childId)!;
    const [outcome] = await this.#await([{ ...mine, onFailure: 'fail' }]);
    return outcome!.result as R;
  }

  /** Reads the children once; fails, suspends, or returns their outcomes. */
  async #await(wanted: Array<{ id: number; task: string; onFailure: ChildFailurePolicy }>): Promise<ChildOutcome[]> {
    const host = this.#host;
    host.waits.checkNotSuspended();
    if (wanted.length === 0) return [];
    const rows = new Map((await host.list()).map((r) => [r.id, r]));
    const outcomes: ChildOutcome[] = [];
    const unfinished: number[] = [];
    for (const w of wanted) {
      const row = rows.get(w.id);
      if (row === undefined) throw new NonRetryableError(`child job ${w.id} (${w.task}) no longer exists (deleted while its parent waited)`);
      if (row.state === 'queued' || row.state === 'running') {
        unfinished.push(w.id);
        continue;
      }
      const outcome: ChildOutcome = { id: row.id, task: row.task, state: row.state, result: row.result === null ? null : (JSON.parse(row.result) as Json), error: row.error };
      if (row.state !== 'completed' && w.onFailure === 'fail') throw new ChildFailedError(outcome);
      outcomes.push(outcome);
    }
    if (unfinished.length > 0) throw host.waits.suspend({ kind: 'children', ids: unfinished, until: new Date(NEVER) });
    return outcomes;
  }
}
