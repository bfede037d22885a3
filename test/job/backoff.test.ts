import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF, backoffDelay } from '../../src/job/backoff.js';

const never = () => {
  throw new Error('a policy without jitter must not draw a random number');
};

describe('backoffDelay (src/job/backoff.ts)', () => {
  it('exponential without jitter doubles from `delay` on every attempt', () => {
    const policy = { type: 'exponential', delay: 100, maxDelay: 1_000_000, jitter: false } as const;
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay(policy, attempt, never))).toEqual([100, 200, 400, 800, 1600]);
  });

  it('exponential is capped at maxDelay, also for huge attempt numbers (no Infinity or NaN)', () => {
    const policy = { type: 'exponential', delay: 100, maxDelay: 1000, jitter: false } as const;
    expect([4, 5, 6, 50, 5000].map((attempt) => backoffDelay(policy, attempt, never))).toEqual([800, 1000, 1000, 1000, 1000]);
  });

  it('equal jitter stays within [ceiling/2, ceiling): random 0 gives half, random 0.999 just under the ceiling', () => {
    const policy = { type: 'exponential', delay: 1000, maxDelay: 60_000, jitter: true } as const;
    for (const [attempt, ceiling] of [
      [1, 1000],
      [2, 2000],
      [3, 4000],
      [10, 60_000],
    ] as const) {
      const low = backoffDelay(policy, attempt, () => 0);
      const high = backoffDelay(policy, attempt, () => 0.999);
      expect(low).toBe(ceiling / 2);
      expect(high).toBeGreaterThan(low);
      expect(high).toBeLessThan(ceiling);
      expect(high).toBe(Math.floor(ceiling / 2 + (0.999 * ceiling) / 2));
      expect(Number.isInteger(high)).toBe(true);
    }
  });

  it('jitter is on by default for exponential (a retry is never immediate), off for fixed', () => {
    let drawn = 0;
    const random = () => {
      drawn++;
      return 0;
    };
    expect(backoffDelay({ type: 'exponential', delay: 400 }, 1, random)).toBe(200);
    expect(drawn).toBe(1);
    expect(backoffDelay({ type: 'fixed', delay: 400 }, 7, never)).toBe(400);
  });

  it('fixed returns `delay` for every attempt (and 0 is allowed)', () => {
    const policy = { type: 'fixed', delay: 50 } as const;
    expect([1, 2, 3, 100].map((attempt) => backoffDelay(policy, attempt, never))).toEqual([50, 50, 50, 50]);
    expect(backoffDelay({ type: 'fixed', delay: 0 }, 3, never)).toBe(0);
  });

  it('the default policy is exponential from 1 s with jitter, capped at 1 h', () => {
    expect(DEFAULT_BACKOFF).toEqual({ type: 'exponential', delay: 1000, maxDelay: 3_600_000, jitter: true });
    expect(backoffDelay(DEFAULT_BACKOFF, 1, () => 0)).toBe(500);
    expect(backoffDelay(DEFAULT_BACKOFF, 40, () => 0)).toBe(1_800_000);
    expect(backoffDelay(DEFAULT_BACKOFF, 40, () => 0.999)).toBeLessThan(3_600_000);
  });
});
