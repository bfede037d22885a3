import * as z from 'zod';

/**
 * What happens when a job is enqueued with a concurrency key (issue 12):
 * - `queue`: it waits for its key's turn and room (the default);
 * - `cancelInProgress`: the new job and the newest `limit` − 1 (by enqueue order, none at
 *   limit 1) of the key's older queued and running jobs not already being cancelled
 *   win; every other older one ends: queued ones `cancelled` at once, running ones
 *   through the cooperative cancel (their handler's signal aborts with a CancelledError
 *   naming the job that superseded them);
 * - `keepLatest`: debounce — the key's older queued jobs end `cancelled`; running ones go on;
 * - `dropNewest`: the new job ends `cancelled` at once when its key already has `limit`
 *   jobs queued or running (Hatchet's CANCEL_NEWEST).
 * Cancelled jobs carry a `cancelReason` that names the job and the strategy.
 */
export type ConcurrencyStrategy = 'queue' | 'cancelInProgress' | 'keepLatest' | 'dropNewest';

/** The strategies, for validation and docs. */
export const CONCURRENCY_STRATEGIES = ['queue', 'cancelInProgress', 'keepLatest', 'dropNewest'] as const satisfies readonly ConcurrencyStrategy[];

/** The concurrency keys of schedules' runs start with this (overlap policies, schedule.ts). */
export const SCHEDULE_KEY_PREFIX = 'baton:schedule:';

/** The concurrency key the runs of schedule `name` share under an overlap policy but `allow`. */
export function scheduleConcurrencyKey(name: string): string {
  return SCHEDULE_KEY_PREFIX + name;
}

/** The largest per-key limit: the queue limit's bound (MAX_QUEUE_CONCURRENCY), far above any fleet. */
export const MAX_KEY_CONCURRENCY = 1_000_000;

/** The longest concurrency key, in characters (the idempotency key's bound). */
export const MAX_CONCURRENCY_KEY = 500;

/**
 * A task's per-key concurrency (`defineTask(name, { concurrency })`): the jobs of one
 * queue sharing a key run at most `limit` at once across the fleet, and keys with queued
 * work take turns at every claim (the fewest running first, then the longest waiting),
 * so one key's backlog never starves another's.
 */
export interface KeyConcurrency<Payload> {
  /**
   * The key of a job from its payload (after the schema), e.g. `(p) => p.customerId`;
   * null or undefined: the job has no key. An enqueue's `concurrencyKey` wins.
   */
  key?: (payload: Payload) => string | null | undefined;
  /** Most running jobs per key, fleet-wide, 1..1000000. @defaultValue 1 */
  limit?: number;
  /** @defaultValue 'queue' */
  strategy?: ConcurrencyStrategy;
}

/** The option's shape check (defineTask reports its issues). */
export const keyConcurrencySchema = z
  .object({
    key: z.custom<(payload: unknown) => unknown>((v) => typeof v === 'function', 'must be a function of the payload').optional(),
    limit: z.number().int().min(1).max(MAX_KEY_CONCURRENCY).optional(),
    strategy: z.enum(CONCURRENCY_STRATEGIES).optional(),
  })
  .strict();
