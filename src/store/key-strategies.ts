import { SCHEDULE_KEY_PREFIX, type ConcurrencyStrategy } from '../job/concurrency.js';
import type { NewJob } from './store.js';

/**
 * What both drivers share of the concurrency strategies: which inserts have one to
 * apply, and the cancel reasons they store, so that a handler's CancelledError and the
 * job's `cancelReason` say what happened.
 */

/**
 * Whether inserting `job` has a concurrency strategy to apply (issue 12): it has a
 * concurrency key and a strategy other than 'queue' (the default, which changes nothing).
 */
export function hasKeyStrategy(job: NewJob): job is NewJob & { concurrencyKey: string; concurrencyStrategy: Exclude<ConcurrencyStrategy, 'queue'> } {
  return job.concurrencyStrategy !== undefined && job.concurrencyStrategy !== 'queue' && !!job.concurrencyKey;
}

/** The schedule whose runs share `key`, or null for a key of the user's. */
function scheduleOf(key: string): string | null {
  return key.startsWith(SCHEDULE_KEY_PREFIX) ? key.slice(SCHEDULE_KEY_PREFIX.length) : null;
}

/** A job ended by a newer job of its key (`cancelInProgress`, `keepLatest`; a schedule's `cancelPrevious`, `queue`). */
export function supersededReason(newerId: number, key: string, strategy: ConcurrencyStrategy): string {
  const schedule = scheduleOf(key);
  if (schedule !== null) return `superseded by job ${newerId}, a newer tick of schedule ${JSON.stringify(schedule)} (overlap ${strategy === 'keepLatest' ? 'queue' : 'cancelPrevious'})`;
  return `superseded by job ${newerId} (concurrency key ${JSON.stringify(key)}, strategy ${strategy})`;
}

/** A new job dropped because its key was full (`dropNewest`; a schedule's `skip`). */
export function droppedReason(key: string, limit: number): string {
  const schedule = scheduleOf(key);
  if (schedule !== null) return `skipped: the previous run of schedule ${JSON.stringify(schedule)} is still queued or running (overlap skip)`;
  return `dropped: concurrency key ${JSON.stringify(key)} already has ${limit} job${limit === 1 ? '' : 's'} queued or running (strategy dropNewest)`;
}

/**
 * Who asked for a cancel a concurrency strategy made (the `by` of its timeline event):
 * `schedule:<name>` for a schedule's overlap policy, else `key:<strategy>`.
 */
export function strategyActor(key: string, strategy: ConcurrencyStrategy): string {
  const schedule = scheduleOf(key);
  return schedule !== null ? `schedule:${schedule}` : `key:${strategy}`;
}
