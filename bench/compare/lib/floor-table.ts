/**
 * bench:compare's FLOOR rows and the W2 rows' "share of floor" columns: the storage
 * floors of bench/floor/variants.ts as table rows, and each drain's median jobs/s ÷
 * its driver's median floor, both from the same run.
 */
import { FLOOR_VARIANTS, shareOfFloor } from '../../floor/variants.js';
import type { Row } from './durable.js';

/** One FLOOR row per floor variant (key `floor-<variant key>`), jobs/s with µs per job. */
export function floorRows(jobs: number): Row[] {
  return FLOOR_VARIANTS.map((v) => ({
    key: `floor-${v.key}`,
    workload: 'FLOOR',
    label: `storage floor, no job system: ${v.label}, ${jobs.toLocaleString('en')} jobs`,
    unit: 'jobs/s',
    better: 'higher',
    perJob: true,
  }));
}

/**
 * The share-of-floor text of every drain row (a row with `concurrency`), by Baton
 * system name, for the systems whose driver's floor was measured.
 * @param median - the median of a row's samples for a system; undefined without samples
 * @returns row key → system name → text, e.g. "42% of 1×10; 19% of the best, 4×10"
 */
export function floorShares(rows: readonly Row[], batons: ReadonlyArray<{ name: string; driver?: string }>, median: (key: string, system: string) => number | undefined): Map<string, Record<string, string>> {
  const shares = new Map<string, Record<string, string>>();
  for (const baton of batons) {
    if (!baton.driver) continue;
    const floors = new Map<string, number>();
    for (const v of FLOOR_VARIANTS) {
      const value = median(`floor-${v.key}`, baton.name);
      if (v.driver === baton.driver && value !== undefined) floors.set(v.key, value);
    }
    if (floors.size === 0) continue;
    for (const row of rows) {
      const drain = row.concurrency === undefined ? undefined : median(row.key, baton.name);
      if (drain === undefined) continue;
      shares.set(row.key, { ...shares.get(row.key), [baton.name]: shareOfFloor(baton.driver, floors, drain, row.concurrency!) });
    }
  }
  return shares;
}
