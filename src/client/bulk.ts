import { setImmediate as nextTurn } from 'node:timers/promises';
import * as z from 'zod';
import { ConflictError, NotFoundError } from '../errors.js';
import type { JobState } from '../job/types.js';
import type { FinishedState, JobBulkFilter } from '../store/store.js';
import { parseInput, storableString } from '../validation.js';
import type { ClientDeps } from './deps.js';
import { storedTime } from './enqueue.js';
import { knownJobId } from './query.js';
import { MAX_REASON } from './cancel.js';

/**
 * Which jobs a bulk operation applies to: every given field must match. A filter
 * with none of them is refused unless `all` is true, so that a forgotten flag never
 * touches every job.
 */
export interface BulkFilter {
  /** One state among those the operation applies to (default: all of them). */
  state?: JobState;
  queue?: string;
  task?: string;
  /** Jobs created strictly before this time (not for `purge`). */
  createdBefore?: Date;
  /** Jobs that finished strictly before this time. */
  finishedBefore?: Date;
  /** Allow a filter with no other field: every job the operation applies to. @defaultValue false */
  all?: boolean;
}

/** Options of every bulk operation. */
export interface BulkOptions {
  /** Count the matching jobs and change nothing. @defaultValue false */
  dryRun?: boolean;
  /**
   * Jobs per batch, each batch one transaction (or one statement), 1..10000. Between two
   * batches the event loop takes a turn: on SQLite a batch runs synchronously, and a bulk
   * operation that went from batch to batch without one held the process for its whole
   * length (a purge of 300k jobs: 18 s), heartbeats, probes and every other request
   * included (issue 31). @defaultValue 1000
   */
  batchSize?: number;
  /**
   * At most this many jobs (≥ 1), the lowest ids first (purge: the oldest finished
   * first). A confirmation that repeats a dry run's `matched` as `limit` never
   * touches more jobs than were shown, even when more matched meanwhile (the
   * dashboard's bulk retry does this). With `dryRun`, `matched` is capped at it.
   * @defaultValue no limit
   */
  limit?: number;
  /** Called after each batch with the number of jobs processed so far (for a progress bar); not with `dryRun`. */
  onProgress?: (processed: number) => void;
}

/** Options of `cancelMany` beside the bulk ones. */
export interface CancelManyOptions {
  /** Passed to each running job's handler as `CancelledError.reason`, at most 10,000 characters. */
  reason?: string;
  /** Who asks (1..200 characters), recorded in each job's timeline as "<by> (cancel-many)". @defaultValue 'api' */
  by?: string;
}

/** Options of `retryMany` beside the bulk ones. */
export interface RetryManyOptions {
  /** Start each job from scratch: checkpoint and progress cleared, as `retry(id, { fresh: true })`. @defaultValue false */
  fresh?: boolean;
}

/** What a bulk operation answers. With `dryRun`, `matched` is the count and every other figure is 0. */
export interface BulkResult {
  dryRun: boolean;
  /** Jobs that matched the filter (with `dryRun`: now; otherwise: as each batch was read). */
  matched: number;
}

/** What `retryMany` did: `retried` ≤ `matched`; the rest changed state meanwhile or have a key a live job holds. */
export interface RetryManyResult extends BulkResult {
  retried: number;
}

/** What `cancelMany` did: queued jobs `cancelled` at once; running ones `requested` (their workers abort them). */
export interface CancelManyResult extends BulkResult {
  cancelled: number;
  requested: number;
}

/** What `purge` did. */
export interface PurgeResult extends BulkResult {
  deleted: number;
}

/** `baton.jobs`: deleting a job, and retrying, cancelling or purging many by filter. */
export interface JobAdmin {
  /**
   * Deletes a job that is not running (queued, completed, failed or cancelled):
   * its row is gone. A running job is refused: cancel it first.
   * @returns the id and the state it had
   * @throws NotFoundError for an unknown id (or one that is not a positive integer); ConflictError for a running job (state 'running')
   */
  delete(id: number): Promise<{ id: number; state: JobState }>;
  /**
   * Failed and cancelled jobs matching `filter` → queued now, attempt 0 (errors
   * kept), as `retry(id)` does one, in batches of `batchSize`; each resumes from its
   * checkpoint, or starts from scratch with `fresh`. A keyed job whose key
   * a queued or running job holds is skipped.
   * @throws ValidationError for a bad filter (a state other than failed or cancelled, an empty filter without `all`) or options
   */
  retryMany(filter: BulkFilter, options?: BulkOptions & RetryManyOptions): Promise<RetryManyResult>;
  /**
   * Queued and running jobs matching `filter` are cancelled as `cancel(id)` does
   * one: queued → cancelled at once; running → the cancel request reaches the
   * worker, which aborts the handler's signal with CancelledError(`reason`).
   * @throws ValidationError for a bad filter (a state other than queued or running, an empty filter without `all`) or options
   */
  cancelMany(filter: BulkFilter, options?: BulkOptions & CancelManyOptions): Promise<CancelManyResult>;
  /**
   * Deletes finished jobs (completed, failed, cancelled) matching `filter`, oldest
   * finished first, `batchSize` per statement.
   * @throws ValidationError for a bad filter (a state that is not finished, `createdBefore`, an empty filter without `all`) or options
   */
  purge(filter: BulkFilter, options?: BulkOptions): Promise<PurgeResult>;
}

const RETRYABLE = ['failed', 'cancelled'] as const;
const CANCELLABLE = ['queued', 'running'] as const;
const FINISHED = ['completed', 'failed', 'cancelled'] as const;

/** The filter schema of an operation that applies to `states`. */
function filterSchema(operation: string, states: readonly [JobState, ...JobState[]], withCreated: boolean) {
  const name = storableString().min(1).max(200);
  const time = storedTime();
  const base = z.strictObject({
    state: z.enum(states, { error: `${operation} applies to ${states.join(' or ')} jobs` }).optional(),
    queue: name.optional(),
    task: name.optional(),
    finishedBefore: time.optional(),
    all: z.boolean().optional(),
    ...(withCreated ? { createdBefore: time.optional() } : {}),
  });
  return base.refine((f) => f.all === true || Object.entries(f).some(([key, value]) => key !== 'all' && value !== undefined), {
    message: `give a filter (state, queue, task${withCreated ? ', createdBefore' : ''} or finishedBefore), or { all: true } to ${operation} every ${states.join(' or ')} job`,
  });
}

const optionsSchema = z.strictObject({
  dryRun: z.boolean().optional(),
  batchSize: z.number().int().min(1).max(10_000).optional(),
  limit: z.number().int().min(1).optional(),
  onProgress: z.custom<(processed: number) => void>((value) => typeof value === 'function', 'a function').optional(),
});
const cancelOptionsSchema = optionsSchema.extend({ reason: storableString().max(MAX_REASON).optional(), by: storableString().min(1).max(200).optional() });
const retryOptionsSchema = optionsSchema.extend({ fresh: z.boolean().optional() });
/** Each operation's options schema. */
const OPTIONS = { cancel: cancelOptionsSchema, retry: retryOptionsSchema, purge: optionsSchema };

/** Checks filter and options; the store filter and the batch size. @throws ValidationError */
function parse(operation: keyof typeof OPTIONS, states: readonly [JobState, ...JobState[]], withCreated: boolean, filter: BulkFilter, options: BulkOptions & CancelManyOptions & RetryManyOptions) {
  const f = parseInput(filterSchema(operation, states, withCreated), filter, `invalid ${operation} filter`, { subject: 'filter' }) as BulkFilter;
  const o: BulkOptions & CancelManyOptions & RetryManyOptions = parseInput(OPTIONS[operation], options, `invalid ${operation} options`, { subject: 'options' });
  const store: JobBulkFilter = { states: f.state ? [f.state] : [...states] };
  if (f.queue !== undefined) store.queue = f.queue;
  if (f.task !== undefined) store.task = f.task;
  if (f.createdBefore) store.createdBefore = f.createdBefore.getTime();
  if (f.finishedBefore) store.finishedBefore = f.finishedBefore.getTime();
  return { filter: store, dryRun: o.dryRun ?? false, batchSize: o.batchSize ?? 1000, limit: o.limit ?? Infinity, reason: o.reason ?? null, by: `${o.by ?? 'api'} (cancel-many)`, fresh: o.fresh ?? false, onProgress: o.onProgress ?? (() => undefined) };
}

/** The dry run's answer: how many jobs match now, capped at `limit`. */
async function countMatching(deps: ClientDeps, { filter, limit }: { filter: JobBulkFilter; limit: number }): Promise<number> {
  return Math.min(limit, await deps.store.jobCount(filter));
}

/**
 * Pages through the ids matching `filter` by id, `batchSize` at a time, one state
 * after the other (each page a range of the (state, id) index, never a sort of
 * every match), and hands each batch to `apply`, stopping after `limit` ids.
 * @returns how many ids were read
 */
async function forEachBatch(
  deps: ClientDeps,
  { filter, batchSize, limit, onProgress }: { filter: JobBulkFilter; batchSize: number; limit: number; onProgress: (processed: number) => void },
  apply: (ids: number[]) => Promise<void>,
): Promise<number> {
  let matched = 0;
  for (const state of filter.states) {
    for (let afterId = 0; matched < limit; ) {
      const page = Math.min(batchSize, limit - matched);
      const ids = await deps.store.jobSelectIds({ ...filter, states: [state], afterId, limit: page });
      matched += ids.length;
      if (ids.length > 0) {
        await apply(ids);
        onProgress(matched);
      }
      if (ids.length < page) break;
      afterId = ids.at(-1)!;
      await nextTurn(); // see BulkOptions.batchSize
    }
  }
  return matched;
}

/** Builds {@link JobAdmin}; `retryMany` emits the client event `jobs:retried` per batch (this process's workers claim at once). */
export function jobAdmin(deps: ClientDeps): JobAdmin {
  return {
    async delete(id) {
      const answer = await deps.store.jobDelete({ id: knownJobId(id) });
      if (!answer) throw new NotFoundError(`no job with id ${id}`);
      if (!answer.deleted) throw new ConflictError(`job ${id} is ${answer.state}; a running job cannot be deleted (cancel it first)`, answer.state);
      return { id, state: answer.state };
    },
    async retryMany(filter, options = {}) {
      const p = parse('retry', RETRYABLE, true, filter, options);
      if (p.dryRun) return { dryRun: true, matched: await countMatching(deps, p), retried: 0 };
      let retried = 0;
      const matched = await forEachBatch(deps, p, async (ids) => {
        const done = await deps.store.jobRetryMany({ ids, now: deps.clock.now(), fresh: p.fresh });
        retried += done.length;
        if (done.length > 0) deps.events.emit('jobs:retried', { ids: done });
      });
      return { dryRun: false, matched, retried };
    },
    async cancelMany(filter, options = {}) {
      const p = parse('cancel', CANCELLABLE, true, filter, options);
      if (p.dryRun) return { dryRun: true, matched: await countMatching(deps, p), cancelled: 0, requested: 0 };
      let cancelled = 0;
      let requested = 0;
      const matched = await forEachBatch(deps, p, async (ids) => {
        const report = await deps.store.jobCancelMany({ ids, reason: p.reason, by: p.by, now: deps.clock.now() });
        cancelled += report.cancelled.length;
        requested += report.requested.length;
      });
      return { dryRun: false, matched, cancelled, requested };
    },
    async purge(filter, options = {}) {
      const p = parse('purge', FINISHED, false, filter, options);
      if (p.dryRun) return { dryRun: true, matched: await countMatching(deps, p), deleted: 0 };
      let deleted = 0;
      while (deleted < p.limit) {
        const page = Math.min(p.batchSize, p.limit - deleted);
        // parse('purge', FINISHED, …) admits finished states only.
        const n = await deps.store.jobDeleteFinished({ ...p.filter, states: p.filter.states as FinishedState[], limit: page });
        deleted += n;
        if (n > 0) p.onProgress(deleted);
        if (n < page) break;
        await nextTurn(); // see BulkOptions.batchSize
      }
      return { dryRun: false, matched: deleted, deleted };
    },
  };
}
