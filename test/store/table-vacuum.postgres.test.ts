/**
 * The jobs table's VACUUM must not hold a connection of the store's pool (issue 11's
 * history bench: with the default pool of one connection, every claim and completion
 * queued behind each VACUUM, and a pass grows with the indexes as history grows).
 * The VACUUM is slowed down for the test by PostgreSQL's own cost-based delay, set
 * on the store's connections through the URL (`options=-c vacuum_cost_delay=…`; it
 * slows VACUUM and ANALYZE only), and the store, with a pool of one, must answer a
 * statement while that VACUUM runs. That test runs in a database of its own: the slowed
 * ANALYZE holds a snapshot for a second or so, which would keep other tests' (and other
 * sessions') vacuums in the shared database from removing their dead rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { churn } from '../conformance/table-health.js';
import { openBaton, postgresUrl, tempDatabase } from '../helpers/db.js';
import { rawQuery } from '../helpers/raw.js';

/** A fresh database on the test server, dropped when the test ends: its URL. */
async function ownDatabase(): Promise<string> {
  const name = `baton_t_${randomBytes(5).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  // DROP DATABASE waits for a checkpoint, and one already under way finishes first: on
  // a loaded machine its fsync of every test relation's file took 69 s (server log,
  // sync files=27126), past the 60 s hook timeout. This timeout only catches a hang.
  onTestFinished(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`), 600_000);
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

describe('the table vacuum on PostgreSQL', () => {
  it('runs VACUUM on a connection of its own: while it runs, the pool (one connection) still serves statements', async () => {
    const server = await ownDatabase();
    const url = new URL(server);
    url.searchParams.set('schema', 'baton');
    url.searchParams.set('pool_size', '1');
    // 10–40 ms asleep per page the VACUUM touches (a pass over this table: seconds).
    url.searchParams.set('options', '-c vacuum_cost_delay=10 -c vacuum_cost_limit=1');
    const schema = url.searchParams.get('schema')!;
    const baton = await openBaton({ database: url.toString() });
    const watcher = new pg.Client({ connectionString: server });
    await watcher.connect();
    await watcher.query('ALTER TABLE baton.jobs SET (autovacuum_enabled = off)'); // only this test's VACUUM runs
    await churn(baton.store);

    const vacuum = baton.store.jobTableVacuum();
    try {
      // Wait for the VACUUM to run (the state asserted below).
      for (const deadline = Date.now() + 30_000; ; ) {
        const { rows } = await watcher.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'VACUUM %' AND query LIKE $1`, [`%"${schema}".jobs, %`]);
        if (rows[0]!.n > 0) break;
        if (Date.now() > deadline) throw new Error('the VACUUM did not start within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const first = await Promise.race([baton.store.jobTableStats().then(() => 'a pool statement'), vacuum.then(() => 'the VACUUM')]);
      expect(first, 'a statement on the pool waited for the VACUUM to end').toBe('a pool statement');
      await vacuum;
    } finally {
      await watcher.end();
    }
  });

  it('analyzes the table too: the planner gets statistics where autovacuum, which would gather them, is off', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    await rawQuery(db, 'ALTER TABLE jobs SET (autovacuum_enabled = off)');
    await churn(baton.store);
    await baton.enqueueMany(Array.from({ length: 10 }, (_, i) => ({ task: 't', payload: { i } })));
    const stateStats = () => rawQuery<{ n: number }>(db, "SELECT count(*)::int AS n FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'jobs' AND attname = 'state'");
    expect((await stateStats())[0]!.n).toBe(0);
    await baton.store.jobTableVacuum();
    expect((await stateStats())[0]!.n).toBe(1);
  });
});
