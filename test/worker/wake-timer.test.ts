import { describe, expect, it } from 'vitest';
import { systemClock } from 'baton-jobs';
import { WakeTimer } from '../../src/worker/wake-timer.js';

describe('WakeTimer', () => {
  it('wakes once per pending time, in order, each armed after the one before fires; nothing after stop', async () => {
    const wakes: number[] = [];
    let third!: () => void;
    const allThree = new Promise<void>((resolve) => (third = resolve));
    const timer = new WakeTimer(systemClock, () => {
      wakes.push(Date.now());
      if (wakes.length === 3) third();
    });
    const now = Date.now();
    // Asked out of order and twice for one time: three wake-ups, not one (the defect: only the earliest woke).
    timer.armAt(now + 30);
    timer.armAt(now + 10);
    timer.armAt(now + 20);
    timer.armAt(now + 20);
    await allThree;
    expect(wakes[0]!).toBeGreaterThan(now + 10);
    expect(wakes[1]!).toBeGreaterThan(now + 20);
    expect(wakes[2]!).toBeGreaterThan(now + 30);
    timer.armAt(Date.now() + 5);
    timer.stop();
    timer.armAt(Date.now() + 5);
    await new Promise((resolve) => setTimeout(resolve, 30)); // room for a wake-up that must not come
    expect(wakes).toHaveLength(3);
  });
});
