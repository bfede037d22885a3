import * as z from 'zod';

/**
 * Retry delay policy. `exponential`: `delay * 2^(attempt-1)` capped at `maxDelay`,
 * then "equal jitter" (half of that value plus a uniform random part of the
 * other half, so a retry is never immediate) when `jitter` is true, as recommended in AWS Architecture Blog, "Exponential Backoff
 * and Jitter" (2015). `fixed`: always `delay`.
 */
export interface Backoff {
  type: 'exponential' | 'fixed';
  /** Base delay in ms. @defaultValue 1000 */
  delay?: number;
  /** Upper bound in ms. @defaultValue 3_600_000 (1 h) */
  maxDelay?: number;
  /** Randomize (equal jitter). @defaultValue true for exponential, false for fixed */
  jitter?: boolean;
}

export const backoffSchema = z.object({
  type: z.enum(['exponential', 'fixed']),
  delay: z.number().int().nonnegative().optional(),
  maxDelay: z.number().int().nonnegative().optional(),
  jitter: z.boolean().optional(),
});

/** Default policy: exponential from 1 s, capped at 1 h, equal jitter. */
export const DEFAULT_BACKOFF: Backoff = { type: 'exponential', delay: 1000, maxDelay: 3_600_000, jitter: true };

/**
 * Delay in ms before the next attempt after `attempt` (1-based) failed.
 * @param random - source of [0,1) values, injectable for tests
 */
export function backoffDelay(policy: Backoff, attempt: number, random: () => number = Math.random): number {
  const base = policy.delay ?? 1000;
  const cap = policy.maxDelay ?? 3_600_000;
  if (policy.type === 'fixed') return Math.min(base, cap);
  const ceiling = Math.min(cap, base * 2 ** Math.max(0, attempt - 1));
  return (policy.jitter ?? true) ? Math.floor(ceiling / 2 + (random() * ceiling) / 2) : ceiling;
}
