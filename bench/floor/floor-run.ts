/**
 * What one measurement of a storage floor gives: how many jobs went through the
 * lean cycle (bench/floor/sqlite.ts, postgres.ts) and how long the timed part took.
 */
export interface FloorRun {
  /** Jobs seeded and then drained through the cycle (each claimed once, completed once). */
  jobs: number;
  /** Wall time of the drain, ms: from the first cycle's start to the last cycle's commit (seeding not counted). */
  ms: number;
  /** `jobs` ÷ seconds. */
  jobsPerSecond: number;
  /** Microseconds per job: 1,000,000 ÷ `jobsPerSecond`. */
  usPerJob: number;
  /** Cycles run (transactions on SQLite, statements on PostgreSQL, over every connection). */
  cycles: number;
}

/** A {@link FloorRun} from `jobs` drained in `ms` milliseconds over `cycles` cycles. */
export function floorRun(jobs: number, ms: number, cycles: number): FloorRun {
  const jobsPerSecond = ms > 0 ? (jobs * 1000) / ms : Number.POSITIVE_INFINITY;
  return { jobs, ms, jobsPerSecond, usPerJob: 1_000_000 / jobsPerSecond, cycles };
}

/**
 * Throws unless every one of `jobs` seeded jobs was completed exactly once: a floor
 * that lost or double-counted jobs would measure nothing.
 * @param completed - rows found completed after the drain
 */
export function checkDrained(what: string, jobs: number, completed: number): void {
  if (completed !== jobs) throw new Error(`${what}: ${completed} of ${jobs} jobs completed after the drain`);
}
