/**
 * The SQLite storage floor: the leanest claim/complete cycle a job queue could run
 * on SQLite, with no job system around it, in this process. What a drain of Baton
 * on SQLite is compared with (its "share of floor").
 *
 * A fresh file (WAL, `synchronous = NORMAL`, better-sqlite3, as Baton's driver opens
 * it) holds a lean `jobs` table with two partial indexes: queued jobs by queue,
 * priority, run_at, id (the claim's order) and running jobs by lease expiry (what a
 * rescuer reads). `jobs` no-op jobs are seeded (not timed); then one loop drains
 * them, each cycle one write transaction (`BEGIN IMMEDIATE` … `COMMIT`) that
 * completes the jobs the previous cycle claimed (fenced by worker id) and claims the
 * next `batch`, returning the columns a worker needs (id, task, payload, attempt).
 * Completed jobs stay in `jobs` as `completed`, or with `move` go to `jobs_finished`
 * (INSERT … SELECT, then DELETE), as Baton's PostgreSQL driver keeps them.
 */
import Database from 'better-sqlite3';
import { sqliteDriver } from '../lib/drivers.js';
import { checkDrained, floorRun, type FloorRun } from './floor-run.js';

export interface SqliteFloorOptions {
  /** Jobs seeded, then drained through the timed cycle; ≥ 1. */
  jobs: number;
  /** Jobs completed and claimed per transaction. @defaultValue 10 */
  batch?: number;
  /** Completed jobs move to a table of their own instead of staying in `jobs`. @defaultValue false */
  move?: boolean;
}

const SCHEMA = `
  CREATE TABLE jobs (
    id INTEGER PRIMARY KEY, queue TEXT NOT NULL, task TEXT NOT NULL, payload TEXT NOT NULL,
    state TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, run_at INTEGER NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0, worker_id TEXT, lease_expires_at INTEGER, finished_at INTEGER
  );
  CREATE INDEX jobs_queued ON jobs (queue, priority, run_at, id) WHERE state = 'queued';
  CREATE INDEX jobs_running ON jobs (lease_expires_at) WHERE state = 'running';
  CREATE TABLE jobs_finished (
    id INTEGER PRIMARY KEY, queue TEXT NOT NULL, task TEXT NOT NULL, payload TEXT NOT NULL,
    state TEXT NOT NULL, attempt INTEGER NOT NULL, finished_at INTEGER NOT NULL
  );`;

/** Named parameters: worker id, lease end and now (ms since the epoch), queue, limit. */
const CLAIM = `UPDATE jobs SET state = 'running', attempt = attempt + 1, worker_id = @worker, lease_expires_at = @leaseEnd
  WHERE id IN (SELECT id FROM jobs WHERE state = 'queued' AND queue = @queue AND run_at <= @now ORDER BY priority, run_at, id LIMIT @limit)
  RETURNING id, task, payload, attempt`;

/** The `count` jobs of one completion: the ids as `?` each, `@worker` the fence, `@now` ms since the epoch. */
const running = (count: number) => `id IN (${Array(count).fill('?').join(', ')}) AND state = 'running' AND worker_id = @worker`;
const COMPLETE_IN_PLACE = (count: number) => [`UPDATE jobs SET state = 'completed', finished_at = @now, worker_id = NULL, lease_expires_at = NULL WHERE ${running(count)}`];
const COMPLETE_AND_MOVE = (count: number) => [
  `INSERT INTO jobs_finished (id, queue, task, payload, state, attempt, finished_at)
    SELECT id, queue, task, payload, 'completed', attempt, @now FROM jobs WHERE ${running(count)}`,
  `DELETE FROM jobs WHERE ${running(count)}`,
];

const WORKER = 'floor-worker';
const QUEUE = 'default';
const LEASE_MS = 30_000;

/**
 * Seeds `jobs` queued no-op jobs in a fresh SQLite file and drains them through the
 * lean cycle, timed; removes the file afterwards.
 * @returns jobs/s and µs per job of the drain
 * @throws Error when a job was not completed exactly once
 */
export async function sqliteFloor(options: SqliteFloorOptions): Promise<FloorRun> {
  const { jobs, batch = 10, move = false } = options;
  const database = await sqliteDriver.createDatabase(`floor-${move ? 'move' : 'lean'}`);
  const db = new Database(database.url.slice('sqlite:'.length));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    seed(db, jobs);

    const begin = db.prepare('BEGIN IMMEDIATE');
    const commit = db.prepare('COMMIT');
    const claim = db.prepare(CLAIM);
    const completions = new Map<number, Database.Statement[]>();
    const completion = (count: number) => {
      let statements = completions.get(count);
      if (!statements) completions.set(count, (statements = (move ? COMPLETE_AND_MOVE : COMPLETE_IN_PLACE)(count).map((sql) => db.prepare(sql))));
      return statements;
    };

    let cycles = 0;
    let claimed: Array<{ id: number }> = [];
    const started = performance.now();
    do {
      const now = Date.now();
      begin.run();
      if (claimed.length) {
        const ids = claimed.map((job) => job.id);
        for (const statement of completion(claimed.length)) statement.run(...ids, { worker: WORKER, now });
      }
      claimed = claim.all({ worker: WORKER, leaseEnd: now + LEASE_MS, queue: QUEUE, now, limit: batch }) as Array<{ id: number }>;
      commit.run();
      cycles++;
    } while (claimed.length > 0);
    const ms = performance.now() - started;

    const table = move ? 'jobs_finished' : 'jobs';
    checkDrained(`SQLite floor (${move ? 'move' : 'lean'})`, jobs, (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE state = 'completed'`).get() as { n: number }).n);
    return floorRun(jobs, ms, cycles);
  } finally {
    db.close();
    await database.drop();
  }
}

/** Inserts `jobs` queued no-op jobs (payload `{"i": n}`), due now, in one transaction. */
function seed(db: Database.Database, jobs: number): void {
  const insert = db.prepare(`INSERT INTO jobs (queue, task, payload, state, run_at) VALUES (?, 'noop', ?, 'queued', ?)`);
  const now = Date.now();
  db.transaction(() => {
    for (let i = 0; i < jobs; i++) insert.run(QUEUE, `{"i":${i}}`, now);
  })();
}
