/**
 * The nemesis's plan: the same seed gives the same plan and another seed another; faults
 * are in order, never overlap, stay inside the soak's quiet edges, freeze and cut off a
 * worker for longer than its lease, and hit a worker slot (or the whole host for a database
 * restart and a CPU hog); a SQLite plan has no network cut and no database restart.
 */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, countByKind, planNemesis, type NemesisOptions } from './nemesis-plan.js';

const THIRTY_MINUTES: NemesisOptions = { seed: 34, durationMs: 30 * 60_000, driver: 'postgres', leaseMs: 5_000, workers: 4 };

describe('the nemesis plan', () => {
  it('is a function of its options: the same seed gives the same plan, another seed another', () => {
    expect(planNemesis(THIRTY_MINUTES)).toEqual(planNemesis({ ...THIRTY_MINUTES }));
    expect(planNemesis({ ...THIRTY_MINUTES, seed: 35 })).not.toEqual(planNemesis(THIRTY_MINUTES));
  });

  it('orders faults one after another inside the quiet edges, with the durations each kind needs', () => {
    const plan = planNemesis(THIRTY_MINUTES);
    expect(plan.length).toBeGreaterThan(20);
    expect(plan[0]!.at).toBeGreaterThanOrEqual(10_000);
    for (const [i, fault] of plan.entries()) {
      const next = plan[i + 1];
      if (next) expect(next.at).toBeGreaterThanOrEqual(fault.at + fault.durationMs + 2_000);
      expect(fault.at + fault.durationMs).toBeLessThanOrEqual(THIRTY_MINUTES.durationMs - 4 * THIRTY_MINUTES.leaseMs);
      if (fault.kind === 'sigstop' || fault.kind === 'net-cut') {
        expect(fault.durationMs).toBeGreaterThan(THIRTY_MINUTES.leaseMs);
        expect(fault.durationMs).toBeLessThanOrEqual(3 * THIRTY_MINUTES.leaseMs);
      } else if (fault.kind === 'cpu-hog') {
        expect(fault.durationMs).toBeGreaterThanOrEqual(5_000);
      } else {
        expect(fault.durationMs).toBe(0);
      }
      if (fault.kind === 'db-restart' || fault.kind === 'cpu-hog') expect(fault.target).toBeNull();
      else expect([0, 1, 2, 3]).toContain(fault.target);
    }
    // Thirty minutes draw every kind on PostgreSQL.
    expect(Object.values(countByKind(plan)).every((n) => n > 0)).toBe(true);
  });

  it('plans no network cut and no database restart on SQLite', () => {
    const counts = countByKind(planNemesis({ ...THIRTY_MINUTES, driver: 'sqlite' }));
    expect(counts['net-cut']).toBe(0);
    expect(counts['db-restart']).toBe(0);
    expect(counts.sigkill + counts.sigterm + counts.sigstop).toBeGreaterThan(10);
    expect(() => planNemesis({ ...THIRTY_MINUTES, driver: 'sqlite', kinds: ['db-restart'] })).toThrow(RangeError);
  });

  it('draws only the kinds asked for, and nothing when the soak is shorter than its quiet edges', () => {
    const plan = planNemesis({ ...THIRTY_MINUTES, kinds: ['sigkill'] });
    expect(new Set(plan.map((f) => f.kind))).toEqual(new Set(['sigkill']));
    expect(planNemesis({ ...THIRTY_MINUTES, durationMs: 20_000 })).toEqual([]);
  });

  // It once stopped at the first fault that did not fit: 42% of 1-minute plans held none.
  it('draws again a fault that would not end in the window, so a short soak gets the faults that fit', () => {
    const twoMinutes = { ...THIRTY_MINUTES, durationMs: 120_000 };
    for (let seed = 0; seed < 200; seed++) {
      const plan = planNemesis({ ...twoMinutes, seed });
      expect(plan.length, `seed ${seed}`).toBeGreaterThan(0);
      for (const fault of plan) expect(fault.at + fault.durationMs).toBeLessThanOrEqual(120_000 - 4 * THIRTY_MINUTES.leaseMs);
      expect(planNemesis({ ...twoMinutes, seed, kinds: ['sigstop'] }).length, `seed ${seed}, sigstop only`).toBeGreaterThan(0);
    }
  });

  it('refuses options that cannot make a plan', () => {
    expect(() => planNemesis({ ...THIRTY_MINUTES, workers: 0 })).toThrow(RangeError);
    expect(() => planNemesis({ ...THIRTY_MINUTES, leaseMs: 0 })).toThrow(RangeError);
  });

  it('counts a plan by kind, every kind present', () => {
    expect(countByKind([])).toEqual(Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])));
    expect(countByKind([{ kind: 'sigkill' }, { kind: 'sigkill' }]).sigkill).toBe(2);
  });
});
