import * as z from 'zod';

/**
 * The bounds of a queue's fleet-wide settings (concurrency limit, rate limits), checked
 * alike where they are set: `baton.queues` (CLI, dashboard, HTTP) and `defineQueue`.
 */

/** A rate: at most `limit` job starts in any window of `periodMs` (a sliding window, fleet-wide). */
export interface Rate {
  /** Starts per window, 1..10000. */
  limit: number;
  /** The window, ms, 1..604800000 (7 days). */
  periodMs: number;
}

/** The largest queue concurrency limit: far beyond any fleet, small enough to be a plain integer on both drivers. */
export const MAX_QUEUE_CONCURRENCY = 1_000_000;
/** A queue concurrency limit, or null for none (admin and defineQueue). */
export const concurrencySchema = z.number().int().min(1).max(MAX_QUEUE_CONCURRENCY).nullable();
/** The most starts a rate counts per window: a claim counts up to this many logged starts. */
export const MAX_RATE_LIMIT = 10_000;
/** The longest rate window, ms (7 days). */
export const MAX_RATE_PERIOD_MS = 604_800_000;
/** A rate `{ limit, periodMs }`, or null for none (admin and defineQueue). */
export const rateSchema = z.strictObject({
  limit: z.number().int().min(1).max(MAX_RATE_LIMIT),
  periodMs: z.number().int().min(1).max(MAX_RATE_PERIOD_MS),
}).nullable();

/** The settings of a queue that code declares and an override may replace (Store's QueueSetting). */
export const QUEUE_SETTINGS = ['concurrency', 'rateLimit', 'keyRateLimit'] as const;
