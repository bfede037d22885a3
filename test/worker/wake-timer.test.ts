import { describe, expect, it } from 'vitest';
import { systemClock } from 'baton-jobs';
import { WakeTimer } from '../../src/worker/wake-timer.js';

describe('WakeTimer', () => {
  it('wakes after every pending time, each time armed after the one before fires (late on a busy machine, one wake-up covers all times due); nothing after stop', async () => {
    const wakes: number[] = [];
    const now = Date.now();
    let last!: () => void;
    const pastLast = new Promise<void>((resolve) => (last = resolve));
    const timer = new WakeTimer(systemClock, () => {
      wakes.push(Date.now());
      if (Date.now() > now + 30) last();
    });
    // Asked out of order and twice for one time. The defect: only the earliest woke, and the wake-up after +30 never came.
    timer.armAt(now + 30);
    timer.armAt(now + 10);
    timer.armAt(now + 20);
    timer.armAt(now + 20);
    await pastLast;
    expect(wakes[0]!).toBeGreaterThan(now + 10);
    expect(wakes.length).toBeLessThanOrEqual(3);
    const woken = wakes.length;
    timer.armAt(Date.now() + 5);
    timer.stop();
    timer.armAt(Date.now() + 5);
    await new Promise((resolve) => setTimeout(resolve, 30)); // room for a wake-up that must not come
    expect(wakes).toHaveLength(woken);
  });
});
