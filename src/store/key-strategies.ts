import type { ConcurrencyStrategy } from '../job/concurrency.js';

/**
 * The cancel reasons the concurrency strategies store (both drivers), so that a
 * handler's CancelledError and the job's `cancelReason` say what happened.
 */

/** A job ended by a newer job of its key (`cancelInProgress`, `keepLatest`). */
export function supersededReason(newerId: number, key: string, strategy: ConcurrencyStrategy): string {
  return `superseded by job ${newerId} (concurrency key ${JSON.stringify(key)}, strategy ${strategy})`;
}

/** A new job dropped because its key was full (`dropNewest`). */
export function droppedReason(key: string, limit: number): string {
  return `dropped: concurrency key ${JSON.stringify(key)} already has ${limit} job${limit === 1 ? '' : 's'} queued or running (strategy dropNewest)`;
}
