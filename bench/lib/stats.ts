/**
 * Small statistics for benchmark samples. Percentiles use the nearest-rank
 * method: p99 of 20 samples is the largest one, so read p99 of small trial
 * counts as "the worst".
 */

/** The nearest-rank `p`-th percentile (0 < p ≤ 100) of `samples`; NaN when empty. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Count, min, p50, p90, p95, p99, max and mean of `samples` (ms or whatever unit they are in). */
export interface Summary {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Summarizes samples; every field is NaN (count 0) when there are none. */
export function summarize(samples: readonly number[]): Summary {
  const sum = samples.reduce((a, b) => a + b, 0);
  return {
    count: samples.length,
    min: samples.length ? Math.min(...samples) : Number.NaN,
    p50: percentile(samples, 50),
    p90: percentile(samples, 90),
    p95: percentile(samples, 95),
    p99: percentile(samples, 99),
    max: samples.length ? Math.max(...samples) : Number.NaN,
    mean: samples.length ? sum / samples.length : Number.NaN,
  };
}

/** Rounds to `digits` decimals (for printing and the results file). */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Items per second for `count` items done in `ms` milliseconds. */
export function perSecond(count: number, ms: number): number {
  return ms > 0 ? (count * 1000) / ms : Number.POSITIVE_INFINITY;
}
