/**
 * The nemesis's schedule: a seeded random plan of faults over a soak of N minutes, made
 * before the soak starts and printed with its seed, so a failing soak can be replayed
 * fault for fault. Pure: the same options give the same plan.
 *
 * The plan names workers by slot (0..workers-1), not by pid: the nemesis resolves a slot
 * to whichever process fills it when the fault is due (the supervisor restarts dead ones).
 *
 * Faults run one after another, never two at once: a fault starts a random gap after the
 * previous one ended (exponential, mean `meanGapMs`, at least `minGapMs`), so each re-run
 * the checker sees has one cause. The first `quietStartMs` and the last `quietEndMs` are
 * left alone: the fleet warms up, and after the last fault every job has time to end.
 */
import { seededRandom } from '../../bench/lib/clock.js';
import type { FaultKind } from './ledger-events.js';

/** One fault to inject. Times are ms from the soak's start. */
export interface PlannedFault {
  /** When to inject it, ms from the start. */
  at: number;
  kind: FaultKind;
  /** The worker slot hit (0..workers-1); null for `db-restart` and `cpu-hog`, which hit the whole host. */
  target: number | null;
  /**
   * How long it lasts, ms: a SIGSTOP until its SIGCONT, a network cut until restore, the CPU
   * hog's run; 0 for SIGKILL, SIGTERM and a database restart (over when the server is back).
   */
  durationMs: number;
}

/** What {@link planNemesis} plans. */
export interface NemesisOptions {
  /** Any integer; the plan is a function of it and the other options. */
  seed: number;
  /** The soak's length, ms. */
  durationMs: number;
  /** `sqlite` plans no `net-cut` and no `db-restart` (no server to cut off or restart). */
  driver: 'postgres' | 'sqlite';
  /** The workers' lease, ms: a freeze and a cut-off last 1.5–3 times it, so the holder surely loses its jobs. */
  leaseMs: number;
  /** Worker slots, ≥ 1. */
  workers: number;
  /** Mean gap between the end of a fault and the next, ms. @defaultValue 20_000 */
  meanGapMs?: number;
  /** Least gap, ms. @defaultValue 2_000 */
  minGapMs?: number;
  /** No fault before this, ms. @defaultValue 10_000 */
  quietStartMs?: number;
  /** No fault ends later than this before the end, ms. @defaultValue 4 × leaseMs */
  quietEndMs?: number;
  /** How long a CPU hog runs, ms, [min, max]. @defaultValue [5_000, 20_000] */
  hogMs?: [number, number];
  /** The kinds to draw from (before the driver's exclusions), equally likely. @defaultValue every {@link FaultKind} */
  kinds?: readonly FaultKind[];
}

/** Every fault kind, in the order the report lists them. */
export const FAULT_KINDS: readonly FaultKind[] = ['sigkill', 'sigterm', 'sigstop', 'net-cut', 'db-restart', 'cpu-hog'];

/** The kinds that need a database server (none on SQLite). */
const SERVER_FAULTS: readonly FaultKind[] = ['net-cut', 'db-restart'];

/**
 * Plans the faults of one soak.
 * @returns the faults in time order, none overlapping another; [] when the soak is too short for one
 * @throws RangeError when `durationMs`, `leaseMs` or `workers` is not positive, or no kind is left to draw
 */
export function planNemesis(options: NemesisOptions): PlannedFault[] {
  const { seed, durationMs, driver, leaseMs, workers } = options;
  if (!(durationMs > 0) || !(leaseMs > 0) || !(Number.isInteger(workers) && workers >= 1)) {
    throw new RangeError(`durationMs, leaseMs and workers must be positive (got ${durationMs}, ${leaseMs}, ${workers})`);
  }
  const meanGap = options.meanGapMs ?? 20_000;
  const minGap = options.minGapMs ?? 2_000;
  const quietEnd = options.quietEndMs ?? 4 * leaseMs;
  const [hogMin, hogMax] = options.hogMs ?? [5_000, 20_000];
  const kinds = (options.kinds ?? FAULT_KINDS).filter((k) => driver === 'postgres' || !SERVER_FAULTS.includes(k));
  if (kinds.length === 0) throw new RangeError(`no fault kind applies to ${driver}`);

  const random = seededRandom(seed);
  const between = (min: number, max: number) => Math.round(min + random() * (max - min));
  const plan: PlannedFault[] = [];
  const lastEnd = durationMs - quietEnd;
  const shortest = Math.min(...kinds.map((k) => (k === 'sigstop' || k === 'net-cut' ? 1.5 * leaseMs : k === 'cpu-hog' ? hogMin : 0)));
  // A fault that would end after `lastEnd` is drawn again (a shorter one may fit), at most
  // 100 times in one place: a short soak still gets the faults that fit in it.
  for (let at = options.quietStartMs ?? 10_000, draws = 0; at + shortest <= lastEnd && draws < 100; draws++) {
    const kind = kinds[Math.floor(random() * kinds.length)]!;
    const target = kind === 'db-restart' || kind === 'cpu-hog' ? null : Math.floor(random() * workers);
    const duration = kind === 'sigstop' || kind === 'net-cut' ? between(1.5 * leaseMs, 3 * leaseMs) : kind === 'cpu-hog' ? between(hogMin, hogMax) : 0;
    if (at + duration > lastEnd) continue;
    plan.push({ at, kind, target, durationMs: duration });
    at += duration + Math.max(minGap, Math.round(-Math.log(1 - random()) * meanGap));
    draws = -1;
  }
  return plan;
}

/** How many faults of each kind a plan holds (every kind present, 0 when none). */
export function countByKind(plan: readonly { kind: FaultKind }[]): Record<FaultKind, number> {
  const counts = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  for (const fault of plan) counts[fault.kind]++;
  return counts;
}
