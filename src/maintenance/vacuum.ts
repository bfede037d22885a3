import type { Logger } from 'pino';
import type { EventSink } from '../observe/events.js';
import type { JobTablePart, JobTableStats, Store } from '../store/store.js';
import { Loop } from '../worker/loop.js';

/** Time between two reads of the jobs table's statistics, ms. */
export const VACUUM_CHECK_INTERVAL_MS = 5_000;

/**
 * Dead rows past which the table vacuum cleans the jobs table: this many plus
 * {@link VACUUM_DEAD_FRACTION} of the live rows (PostgreSQL autovacuum's own formula,
 * threshold + scale factor × rows, with a larger base and a smaller fraction than its
 * defaults of 50 and 20%: a pass costs a read of every index, so it runs per ~100k
 * dead rows rather than per few thousand, and a large history does not defer it).
 * At ~10k jobs/s and two dead row versions per job that is a pass every ~5 s, and the
 * claim index never holds more than ~100k dead entries.
 */
export const VACUUM_DEAD_ROWS = 100_000;
/** See {@link VACUUM_DEAD_ROWS}. */
export const VACUUM_DEAD_FRACTION = 0.02;

/** What the table vacuum reports; a worker running it emits these among its own (WorkerEvents). */
export interface TableVacuumEvents {
  /**
   * The table of `part` of the jobs was vacuumed (or found being vacuumed by another
   * process or by autovacuum, which `VACUUM (SKIP_LOCKED)` does not wait for).
   * `deadRows` and `liveRows` are the statistics that triggered it; `durationMs` the
   * statement's time.
   */
  'jobs:vacuumed': { part: JobTablePart; deadRows: number; liveRows: number | null; durationMs: number };
}

/** The parts of the jobs a check looks at, in order. */
const PARTS: readonly JobTablePart[] = ['live', 'finished'];

/** What one check found and did, for one part of the jobs. */
export interface VacuumReport {
  stats: JobTableStats;
  /** True when the check ran a vacuum. */
  vacuumed: boolean;
}

/** What a table vacuum needs from the worker that runs it. */
export interface TableVacuumDeps {
  store: Store;
  logger: Logger;
  events: EventSink<TableVacuumEvents>;
  /** The base of the threshold (tests lower it). @defaultValue {@link VACUUM_DEAD_ROWS} */
  minDeadRows?: number;
  /** Called for every failed check (see {@link Loop}); the loop goes on. */
  onError(loop: string, error: unknown, failures: number): void;
}

/** Stores (one per Baton, shared by its workers) whose missing autovacuum was already reported. */
const warned = new WeakSet<Store>();

/**
 * Baton's own vacuum of its job tables, for a PostgreSQL server that does not clean
 * them in time (autovacuum off, as on some managed and test servers, or behind a burst).
 * Every {@link VACUUM_CHECK_INTERVAL_MS} it reads `jobTableStats` of each part of the
 * jobs (`live`: the hot table; `finished`: the history retention deletes from; one read
 * of the server's statistics each) and, for each, once dead rows pass {@link VACUUM_DEAD_ROWS} +
 * {@link VACUUM_DEAD_FRACTION} × live rows, runs `jobTableVacuum` (`VACUUM
 * (SKIP_LOCKED, ANALYZE)` on a connection of its own, so the pool's connections keep
 * serving claims and completions during the pass): dead rows leave the table and the
 * claim index, so claims keep reading only live entries however much history
 * accumulates, and the planner keeps statistics where autovacuum would not gather them.
 * The threshold counts dead rows from what the last vacuum left ("floor"): rows that
 * a transaction older than them may still see (another session's long transaction)
 * no vacuum can remove until it ends, and without the floor every check would run a
 * pass, reading every index, to no effect.
 * ```
 * every 5 s: stats ──dead − floor < threshold──► nothing
 *                  └─dead − floor ≥ threshold──► VACUUM (SKIP_LOCKED, ANALYZE) ──► 'jobs:vacuumed'
 *                                                 floor = dead rows it left
 * ```
 * Every worker runs one. No lease is needed: SKIP_LOCKED makes a vacuum that finds
 * another one running (another process's, or autovacuum's) return at once, so the
 * fleet never runs two and never waits. The two parts are separate tables on PostgreSQL
 * (migration 10), each with its own floor: the hot table's frequent passes never read
 * the history's large indexes, and the history is vacuumed only once retention has
 * deleted enough of it. Where autovacuum is on, the table's own
 * settings (PostgreSQL migration 7) clean it far below this threshold and this loop
 * only reads statistics. The first check logs one warning per store when autovacuum
 * is off. On SQLite, which has no dead rows, it never vacuums.
 *
 * Tests call `runOnce()` instead of waiting for the timer.
 */
export class TableVacuum {
  readonly #deps: TableVacuumDeps;
  readonly #loop: Loop;
  readonly #minDeadRows: number;
  /**
   * Dead rows the last vacuum left (rows a transaction older than them may still
   * see, which no vacuum can remove until it ends); the threshold counts new dead
   * rows from there, so a long transaction elsewhere does not make every check vacuum.
   */
  readonly #floor: Record<JobTablePart, number> = { live: 0, finished: 0 };

  constructor(deps: TableVacuumDeps) {
    this.#deps = deps;
    this.#minDeadRows = deps.minDeadRows ?? VACUUM_DEAD_ROWS;
    this.#loop = new Loop('vacuum', VACUUM_CHECK_INTERVAL_MS, async () => void (await this.runOnce()), deps.onError);
  }

  /**
   * Starts the timer (it does not keep the process alive) and checks once, resolving
   * after that check: the warning, if any, is logged by the time the worker has started.
   * Never rejects (a failed check goes to `onError`).
   */
  async start(): Promise<void> {
    this.#loop.start();
    await this.#loop.runOnce();
  }

  /** Stops the timer and waits for a check (or vacuum) in progress. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /**
   * One check: reads the statistics of each part, warns once when autovacuum is off,
   * vacuums each part past its threshold.
   * @returns what it found and did, by part
   * @throws StoreError when the database cannot be reached (op "jobTableStats" or "jobTableVacuum")
   */
  async runOnce(): Promise<Record<JobTablePart, VacuumReport>> {
    const reports = {} as Record<JobTablePart, VacuumReport>;
    for (const part of PARTS) reports[part] = await this.#check(part);
    return reports;
  }

  async #check(part: JobTablePart): Promise<VacuumReport> {
    const { store, logger, events } = this.#deps;
    const stats = await store.jobTableStats({ part });
    if (!stats.autovacuum && !warned.has(store)) {
      warned.add(store);
      logger.warn(
        { deadRows: stats.deadRows, minDeadRows: this.#minDeadRows, fraction: VACUUM_DEAD_FRACTION },
        'PostgreSQL autovacuum is off for the jobs table (the server\'s autovacuum or track_counts setting, or the table\'s autovacuum_enabled): ' +
          `Baton vacuums the table itself past ${this.#minDeadRows.toLocaleString('en-US')} dead rows + 2% of live rows, which keeps claims fast; turn autovacuum on to keep the rest of the database clean too`,
      );
    }
    const floor = (this.#floor[part] = Math.min(this.#floor[part], stats.deadRows));
    if (stats.deadRows === 0 || stats.deadRows - floor < this.#minDeadRows + VACUUM_DEAD_FRACTION * (stats.liveRows ?? 0)) return { stats, vacuumed: false };
    const started = performance.now();
    await store.jobTableVacuum({ part });
    const durationMs = performance.now() - started;
    this.#floor[part] = (await store.jobTableStats({ part })).deadRows;
    logger.info({ part, deadRows: stats.deadRows, liveRows: stats.liveRows, durationMs: Math.round(durationMs) }, `vacuumed the ${part} jobs' table`);
    events.emit('jobs:vacuumed', { part, deadRows: stats.deadRows, liveRows: stats.liveRows, durationMs });
    return { stats, vacuumed: true };
  }
}
