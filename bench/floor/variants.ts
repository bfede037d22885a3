/**
 * The storage floors the benches measure beside the drains (issue 33, item 1), and
 * how a drain's "share of floor" is read from them. A drain's share is its jobs/s ÷
 * the floor's jobs/s on the same driver, measured in the same run on the same
 * machine: a ratio that a noisy VM moves far less than either absolute figure.
 *
 * - SQLite (bench/floor/sqlite.ts): the lean table, complete 10 + claim 10 a
 *   transaction, completed jobs left in place (the reference), and the same with
 *   completed jobs moved to `jobs_finished`.
 * - PostgreSQL (bench/floor/postgres.ts): complete + move + claim in one statement on
 *   one connection at batch 10 and at batch 50, and on four connections at batch 10.
 *   A drain's reference is the one-connection variant (Baton's default pool holds
 *   one) whose batch is the drain's concurrency, else batch 10; the best variant of
 *   the run is shown beside it.
 */
import { round } from '../lib/stats.js';
import { formatNumber } from '../lib/table.js';
import type { FloorRun } from './floor-run.js';
import { postgresFloor } from './postgres.js';
import { sqliteFloor } from './sqlite.js';

/** One way of running a driver's floor. */
export interface FloorVariant {
  /** Stable id, e.g. `sqlite-lean`, `postgres-4x10` (results files, table keys). */
  key: string;
  /** The bench driver it belongs to: `sqlite` or `postgres`. */
  driver: string;
  /** As printed, e.g. "PostgreSQL, 4 connections × batch 10". */
  label: string;
  /** Connections draining at once. */
  connections: number;
  /** Jobs completed and claimed per cycle. */
  batch: number;
  /** A drain may be measured against it (one connection, the lean table's cycle). */
  reference: boolean;
  /** Seeds `jobs` jobs and drains them through the cycle, timed. */
  run(jobs: number): Promise<FloorRun>;
}

const pgVariant = (connections: number, batch: number): FloorVariant => ({
  key: `postgres-${connections}x${batch}`,
  driver: 'postgres',
  label: `PostgreSQL, complete + move + claim in one statement, ${connections} connection${connections > 1 ? 's' : ''} × batch ${batch}`,
  connections,
  batch,
  reference: connections === 1,
  run: (jobs) => postgresFloor({ jobs, batch, connections }),
});

/** Every floor, in the order they run. */
export const FLOOR_VARIANTS: readonly FloorVariant[] = [
  {
    key: 'sqlite-lean',
    driver: 'sqlite',
    label: 'SQLite, lean table, complete 10 + claim 10 a transaction',
    connections: 1,
    batch: 10,
    reference: true,
    run: (jobs) => sqliteFloor({ jobs, batch: 10 }),
  },
  {
    key: 'sqlite-move',
    driver: 'sqlite',
    label: 'SQLite, the same, completed jobs moved to jobs_finished',
    connections: 1,
    batch: 10,
    reference: false,
    run: (jobs) => sqliteFloor({ jobs, batch: 10, move: true }),
  },
  pgVariant(1, 10),
  pgVariant(4, 10),
  pgVariant(1, 50),
];

/** The floors of one bench driver (none for a driver without one). */
export function floorVariants(driver: string): FloorVariant[] {
  return FLOOR_VARIANTS.filter((v) => v.driver === driver);
}

/** One variant measured. */
export interface FloorMeasurement {
  variant: FloorVariant;
  run: FloorRun;
}

/** Jobs of the untimed warm-up run before a driver's floors (none below this many jobs: `--tiny`). */
const WARM_UP_JOBS = 2_000;

/**
 * Runs every floor of `driver` once, on `jobs` jobs each, one after another, after an
 * untimed warm-up of the first variant on {@link WARM_UP_JOBS} jobs (the runner's
 * driver code is not yet optimized by V8 when the first variant starts: a cold first
 * PostgreSQL variant measured half its warm rate).
 * @param log - one progress line per variant
 */
export async function measureFloors(driver: string, jobs: number, log: (line: string) => void): Promise<FloorMeasurement[]> {
  const measured: FloorMeasurement[] = [];
  const variants = floorVariants(driver);
  if (variants.length && jobs >= WARM_UP_JOBS) await variants[0]!.run(WARM_UP_JOBS);
  for (const variant of variants) {
    const run = await variant.run(jobs);
    log(`floor ${variant.key}: ${jobs} jobs in ${round(run.ms, 0)} ms, ${Math.round(run.jobsPerSecond)} jobs/s, ${round(run.usPerJob, 1)} µs/job`);
    measured.push({ variant, run });
  }
  return measured;
}

/** "77,000 jobs/s (13 µs/job)". */
export function floorText(jobsPerSecond: number): string {
  return `${formatNumber(jobsPerSecond)} jobs/s (${formatNumber(1_000_000 / jobsPerSecond)} µs/job)`;
}

/**
 * A drain's share of its driver's floor, as printed: "11% of sqlite-lean" on SQLite;
 * on PostgreSQL "42% of 1×10; 19% of the best, 4×10" (the best only where it is not
 * the reference). '—' when the run measured no floor for the driver.
 * @param floors - jobs/s by variant key, measured in the same run
 * @param drainJobsPerSecond - the drain's jobs/s
 * @param concurrency - the drain worker's concurrency (picks the reference batch on PostgreSQL)
 */
export function shareOfFloor(driver: string, floors: ReadonlyMap<string, number>, drainJobsPerSecond: number, concurrency: number): string {
  const measured = floorVariants(driver).filter((v) => Number.isFinite(floors.get(v.key)));
  const references = measured.filter((v) => v.reference);
  const reference = references.find((v) => v.batch === concurrency) ?? references.find((v) => v.batch === 10);
  if (!reference || !Number.isFinite(drainJobsPerSecond)) return '—';
  const share = (v: FloorVariant) => `${percent(drainJobsPerSecond / floors.get(v.key)!)} of ${shortName(v)}`;
  const best = measured.reduce((a, b) => (floors.get(b.key)! > floors.get(a.key)! ? b : a));
  return best === reference ? share(reference) : `${share(reference)}; ${share(best).replace(' of ', ' of the best, ')}`;
}

/** 0.4213 → "42%", 0.0302 → "3.0%". */
function percent(ratio: number): string {
  const p = 100 * ratio;
  return `${p >= 10 ? Math.round(p) : p.toFixed(1)}%`;
}

/** `lean`, `move`, `1×10`: a variant's name within its driver. */
function shortName(v: FloorVariant): string {
  return v.driver === 'postgres' ? `${v.connections}×${v.batch}` : v.key.replace(`${v.driver}-`, '');
}
