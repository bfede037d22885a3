import Database from 'better-sqlite3';
import pg from 'pg';
import { DEFAULT_MAX_ATTEMPTS } from '../../src/client/enqueue.js';
import { openClient } from './seed.js';

/** Jobs {@link bulkSeed} writes: `count` queued jobs of one task, payload `{"i":n}` (n = 1..count). */
export interface SeedSpec {
  count: number;
  task: string;
  /** @defaultValue 'default' */
  queue?: string;
  /** @defaultValue 0 */
  priority?: number;
  /** ms since the epoch; every row gets this run time */
  runAt: number;
}

/**
 * Writes `spec.count` queued jobs into the database at `url` with one
 * INSERT … SELECT (generate_series on PostgreSQL, a recursive CTE on SQLite): the
 * rows `enqueueMany` would write for `enqueue(task, { i }, { queue, priority, runAt })`
 * of a task without options (maxAttempts 3, no timeout, no key, created now), in a
 * fraction of the time — 1M jobs in seconds rather than minutes. Runs Baton's
 * migrations first (a client opened and closed). On PostgreSQL the table is then
 * ANALYZEd, as autovacuum's analyze (migration 7: past 2% changed) would do on a server
 * where it runs; this bench server runs with autovacuum off.
 * @returns the time the INSERT took, ms
 */
export async function bulkSeed(url: string, spec: SeedSpec): Promise<number> {
  await (await openClient(url)).close();
  const { count, task, queue = 'default', priority = 0, runAt } = spec;
  const now = Date.now();
  const started = performance.now();
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/.exec(url);
  if (sqlite) {
    const db = new Database(sqlite[1]!);
    try {
      db.pragma('busy_timeout = 10000');
      db.prepare(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < @count)
        INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at)
        SELECT @queue, @task, '{"i":' || i || '}', 'queued', @priority, @runAt, @maxAttempts, NULL, NULL, @now FROM g`).run({
        count,
        queue,
        task,
        priority,
        runAt,
        maxAttempts: DEFAULT_MAX_ATTEMPTS,
        now,
      });
    } finally {
      db.close();
    }
    return performance.now() - started;
  }
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? 'baton';
  parsed.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: parsed.toString() });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO "${schema}".jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at)
       SELECT $1, $2, ('{"i":' || g || '}')::json, 'queued', $3, $4, $5, NULL, NULL, $6 FROM generate_series(1, $7::int) g`,
      [queue, task, priority, new Date(runAt), DEFAULT_MAX_ATTEMPTS, new Date(now), count],
    );
    const ms = performance.now() - started;
    await client.query(`ANALYZE "${schema}".jobs`);
    return ms;
  } finally {
    await client.end();
  }
}
