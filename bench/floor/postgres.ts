/**
 * The PostgreSQL storage floor: the leanest claim/complete cycle a job queue could
 * run on PostgreSQL, with no job system around it, from this process. What a drain
 * of Baton on PostgreSQL is compared with (its "share of floor").
 *
 * A schema of its own (`floor_<random>`, dropped afterwards) in the bench's database
 * (`BATON_BENCH_DATABASE_URL`) holds a lean `jobs` table with two partial indexes
 * (queued jobs by queue, priority, run_at, id; running jobs by lease expiry) and a
 * `jobs_finished` table keyed by id. `jobs` no-op jobs are seeded (not timed); then
 * `connections` loops, each on a connection of its own with `synchronous_commit = off`
 * for its session (the server's configuration is left as it is), drain them. Each
 * cycle is one prepared statement: CTEs delete the jobs the loop claimed last time
 * (fenced by its worker id) and insert them into `jobs_finished`, and the UPDATE
 * claims the next `batch` (`FOR UPDATE SKIP LOCKED`, so loops never wait on one
 * another's rows), returning the columns a worker needs (id, task, payload, attempt).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { dropSchema, postgresUrl, trackSchema } from '../lib/drivers.js';
import { checkDrained, floorRun, type FloorRun } from './floor-run.js';

export interface PostgresFloorOptions {
  /** Jobs seeded, then drained through the timed cycle; ≥ 1. */
  jobs: number;
  /** Jobs completed and claimed per statement. @defaultValue 10 */
  batch?: number;
  /** Connections draining at once, one loop each. @defaultValue 1 */
  connections?: number;
}

const schemaSql = (schema: string) => `
  CREATE SCHEMA "${schema}";
  CREATE TABLE "${schema}".jobs (
    id bigserial PRIMARY KEY, queue text NOT NULL, task text NOT NULL, payload jsonb NOT NULL,
    state text NOT NULL, priority integer NOT NULL DEFAULT 0, run_at timestamptz NOT NULL DEFAULT now(),
    attempt integer NOT NULL DEFAULT 0, worker_id text, lease_expires_at timestamptz
  );
  CREATE INDEX jobs_queued ON "${schema}".jobs (queue, priority, run_at, id) WHERE state = 'queued';
  CREATE INDEX jobs_running ON "${schema}".jobs (lease_expires_at) WHERE state = 'running';
  CREATE TABLE "${schema}".jobs_finished (
    id bigint PRIMARY KEY, queue text NOT NULL, task text NOT NULL, payload jsonb NOT NULL,
    state text NOT NULL, attempt integer NOT NULL, finished_at timestamptz NOT NULL
  );`;

/** `$1` the ids claimed last cycle (bigint[]), `$2` worker id, `$3` queue, `$4` limit. */
const cycleSql = (schema: string) => `
  WITH done AS (
    DELETE FROM "${schema}".jobs WHERE id = ANY($1::bigint[]) AND state = 'running' AND worker_id = $2
    RETURNING id, queue, task, payload, attempt
  ), moved AS (
    INSERT INTO "${schema}".jobs_finished (id, queue, task, payload, state, attempt, finished_at)
    SELECT id, queue, task, payload, 'completed', attempt, now() FROM done
  ), next AS (
    SELECT id FROM "${schema}".jobs WHERE state = 'queued' AND queue = $3 AND run_at <= now()
    ORDER BY priority, run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
  )
  UPDATE "${schema}".jobs j SET state = 'running', attempt = j.attempt + 1, worker_id = $2, lease_expires_at = now() + interval '30 seconds'
  FROM next WHERE j.id = next.id
  RETURNING j.id, j.task, j.payload, j.attempt`;

const QUEUE = 'default';

/**
 * Seeds `jobs` queued no-op jobs in a fresh schema and drains them through the lean
 * cycle on `connections` connections at once, timed from the first statement to the
 * last loop's end; drops the schema afterwards.
 * @returns jobs/s and µs per job of the drain, all connections together
 * @throws Error when the server does not answer, or a job was not completed exactly once
 */
export async function postgresFloor(options: PostgresFloorOptions): Promise<FloorRun> {
  const { jobs, batch = 10, connections = 1 } = options;
  const schema = `floor_${randomBytes(6).toString('hex')}`;
  trackSchema(schema);
  const clients: pg.Client[] = [];
  try {
    for (let i = 0; i < connections; i++) {
      const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5_000 });
      client.on('error', () => undefined); // a dropped connection surfaces through its query
      clients.push(client);
    }
    await Promise.all(clients.map((client) => client.connect().then(() => client.query('SET synchronous_commit = off'))));
    // The first connection also seeds and counts (not timed): no extra connection per variant.
    const first = clients[0]!;
    await first.query(schemaSql(schema));
    await first.query(`INSERT INTO "${schema}".jobs (queue, task, payload, state) SELECT $1, 'noop', jsonb_build_object('i', i), 'queued' FROM generate_series(1, $2::int) AS i`, [QUEUE, jobs]);
    await first.query(`ANALYZE "${schema}".jobs`);
    const text = cycleSql(schema);
    const started = performance.now();
    const cycles = await Promise.all(clients.map((client, i) => drainLoop(client, text, `floor-worker-${i}`, batch)));
    const ms = performance.now() - started;
    const completed = (await first.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".jobs_finished`)).rows[0]!.n;
    checkDrained(`PostgreSQL floor (${connections}×${batch})`, jobs, completed);
    return floorRun(jobs, ms, cycles.reduce((a, b) => a + b, 0));
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    await dropSchema(schema);
  }
}

/**
 * One connection's loop: completes what it claimed last and claims up to `batch`,
 * until a cycle claims nothing (the queue is empty, or its last jobs are locked by
 * another loop's statement, which will complete them).
 * @returns the cycles (statements) it ran
 */
async function drainLoop(client: pg.Client, text: string, worker: string, batch: number): Promise<number> {
  let cycles = 0;
  let claimed: string[] = [];
  do {
    const { rows } = await client.query<{ id: string }>({ name: 'floor-cycle', text, values: [claimed, worker, QUEUE, batch] });
    claimed = rows.map((row) => row.id);
    cycles++;
  } while (claimed.length > 0);
  return cycles;
}
