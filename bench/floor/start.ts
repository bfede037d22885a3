/**
 * The start-latency floor (issue 33, W3): the least time from a producer's enqueue to
 * a worker holding the job, with no job system around it, in this process, paced as
 * W3 is (Poisson arrivals). What W3's enqueue→start rows are read against.
 *
 * - PostgreSQL: one connection enqueues (a one-row INSERT and a NOTIFY in one
 *   transaction, committed as the server is configured: with `synchronous_commit` on,
 *   a WAL flush, the fsync floor of any durable enqueue); another LISTENs and, on each
 *   notification, claims (`FOR UPDATE SKIP LOCKED`, `synchronous_commit = off` for its
 *   session, as Baton's claim runs). Measured from just before the INSERT to the claim's
 *   rows arriving; the INSERT's own round trip is printed as the fsync floor.
 * - SQLite: one connection inserts, a second claims right after the insert returns (WAL,
 *   `synchronous = NORMAL`: a commit writes the WAL without an fsync). There is no
 *   wake-up between processes in the floor: what it bounds is two commits.
 */
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { paced } from '../lib/clock.js';
import { dropSchema, postgresUrl, sqliteDriver, trackSchema } from '../lib/drivers.js';
import { summarize, type Summary } from '../lib/stats.js';

/** One start floor measured: ms per sample. */
export interface StartFloor {
  /** Enqueue → the claim's rows back, ms. */
  start: Summary;
  /** The enqueue's commit alone, ms (PostgreSQL: includes the WAL flush, the fsync floor). */
  enqueue: Summary;
}

export interface StartFloorOptions {
  /** Samples kept. */
  count: number;
  /** Samples before them, left out (connections and plans warm up). */
  warmup: number;
  /** Mean arrivals per second (W3's rate). */
  rate: number;
}

const SCHEMA = (table: string) => `CREATE TABLE ${table} (id BIGSERIAL PRIMARY KEY, task TEXT NOT NULL, payload TEXT NOT NULL, state TEXT NOT NULL, worker_id TEXT)`;
const QUEUED_INDEX = (table: string) => `CREATE INDEX ${table.replace(/\W/g, '_')}_queued ON ${table} (id) WHERE state = 'queued'`;

/**
 * Measures the start floor of `driver` ('sqlite' or 'postgres') on fresh storage it
 * removes afterwards.
 * @throws Error for another driver, or when a job enqueued is never claimed
 */
export async function measureStartFloor(driver: string, options: StartFloorOptions): Promise<StartFloor> {
  if (driver === 'postgres') return postgresStartFloor(options);
  if (driver === 'sqlite') return sqliteStartFloor(options);
  throw new Error(`no start floor for driver ${driver}`);
}

async function postgresStartFloor({ count, warmup, rate }: StartFloorOptions): Promise<StartFloor> {
  const schema = `startfloor_${randomBytes(6).toString('hex')}`;
  const table = `"${schema}".jobs`;
  const channel = `${schema}_jobs`;
  trackSchema(schema);
  const enqueuer = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5_000 });
  const claimer = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5_000 });
  for (const client of [enqueuer, claimer]) client.on('error', () => undefined); // surfaces through its query
  try {
    await Promise.all([enqueuer.connect(), claimer.connect()]);
    await enqueuer.query(`CREATE SCHEMA "${schema}"; ${SCHEMA(table)}; ${QUEUED_INDEX(table)}`);
    await claimer.query(`SET synchronous_commit = off; LISTEN "${channel}"`);
    const claim = {
      name: 'start-floor-claim',
      text: `UPDATE ${table} j SET state = 'running', worker_id = 'w' FROM (SELECT id FROM ${table} WHERE state = 'queued' ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED) n WHERE j.id = n.id RETURNING j.id`,
    };
    const claims = new Arrival<string>();
    claimer.on('notification', () => {
      void claimer.query<{ id: string }>(claim).then(({ rows }) => {
        const at = performance.now();
        for (const row of rows) claims.arrive(row.id, at);
      }, () => undefined); // a failed claim leaves its jobs unclaimed: when() names them
    });
    const enqueue = { name: 'start-floor-enqueue', text: `WITH i AS (INSERT INTO ${table} (task, payload, state) VALUES ('latency', $1, 'queued') RETURNING id) SELECT id, pg_notify($2, id::text) FROM i` };
    const start: number[] = [];
    const commit: number[] = [];
    await paced(warmup + count, rate, async (i) => {
      const t0 = performance.now();
      const { rows } = await enqueuer.query<{ id: string }>({ ...enqueue, values: [`{"i":${i}}`, channel] });
      const t1 = performance.now();
      const t2 = await claims.when(rows[0]!.id, 'PostgreSQL start floor');
      if (i >= warmup) {
        start.push(t2 - t0);
        commit.push(t1 - t0);
      }
    });
    return { start: summarize(start), enqueue: summarize(commit) };
  } finally {
    await Promise.all([enqueuer.end().catch(() => undefined), claimer.end().catch(() => undefined)]);
    await dropSchema(schema);
  }
}

async function sqliteStartFloor({ count, warmup, rate }: StartFloorOptions): Promise<StartFloor> {
  const database = await sqliteDriver.createDatabase('start-floor');
  const file = database.url.slice('sqlite:'.length);
  const producer = new Database(file);
  let worker: Database.Database | undefined;
  try {
    producer.pragma('journal_mode = WAL');
    producer.pragma('synchronous = NORMAL');
    producer.exec(`${SCHEMA('jobs').replace('BIGSERIAL', 'INTEGER')}; ${QUEUED_INDEX('jobs')}`);
    worker = new Database(file);
    worker.pragma('synchronous = NORMAL');
    const insert = producer.prepare(`INSERT INTO jobs (task, payload, state) VALUES ('latency', ?, 'queued')`);
    const claim = worker.prepare(`UPDATE jobs SET state = 'running', worker_id = 'w' WHERE id IN (SELECT id FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 10) RETURNING id`);
    const claimTransaction = worker.transaction(() => claim.all());
    const start: number[] = [];
    const commit: number[] = [];
    await paced(warmup + count, rate, async (i) => {
      const t0 = performance.now();
      insert.run(`{"i":${i}}`);
      const t1 = performance.now();
      if (claimTransaction.immediate().length === 0) throw new Error(`SQLite start floor: job ${i} not claimed`);
      const t2 = performance.now();
      if (i >= warmup) {
        start.push(t2 - t0);
        commit.push(t1 - t0);
      }
    });
    return { start: summarize(start), enqueue: summarize(commit) };
  } finally {
    worker?.close();
    producer.close();
    await database.drop();
  }
}

/**
 * Arrivals by key that may come before or after someone waits for them: a claim's
 * rows can return before the INSERT that enqueued them has returned to its sender.
 */
class Arrival<K> {
  readonly #arrived = new Map<K, number>();
  readonly #waiting = new Map<K, (at: number) => void>();

  /** Records `key` arriving at `at` (performance.now() ms). */
  arrive(key: K, at: number): void {
    const waiter = this.#waiting.get(key);
    if (waiter) {
      this.#waiting.delete(key);
      waiter(at);
    } else this.#arrived.set(key, at);
  }

  /**
   * When `key` arrived (now or later).
   * @throws Error naming `what` when it has not arrived within 10 s
   */
  when(key: K, what: string): Promise<number> {
    const at = this.#arrived.get(key);
    if (at !== undefined) {
      this.#arrived.delete(key);
      return Promise.resolve(at);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(key);
        reject(new Error(`${what}: job ${String(key)} not claimed within 10 s`));
      }, 10_000);
      this.#waiting.set(key, (arrived) => {
        clearTimeout(timer);
        resolve(arrived);
      });
    });
  }
}
