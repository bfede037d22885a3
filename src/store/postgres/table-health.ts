import type { JobTablePart, JobTableStats, StoreParams } from '../store.js';
import type { PgContext } from './context.js';

/**
 * The job tables' health on PostgreSQL (dead rows, vacuum); see the Store interface
 * for each contract. `live` is `jobs`, `finished` is `jobs_finished` (migration 10).
 */

/** Reloption values PostgreSQL reads as false (its boolean input syntax, lower case). */
const OFF = "('off', 'false', 'f', 'no', 'n', '0')";

/** The table of each part of the jobs. */
const TABLES: Record<JobTablePart, string> = { live: ':schema.jobs', finished: ':schema.jobs_finished' };

export async function jobTableStats(ctx: PgContext, params: StoreParams<'jobTableStats'>): Promise<JobTableStats> {
  const table = TABLES[params?.part ?? 'live'];
  const rows = await ctx.query<{ live: number; dead: number; autovacuum: boolean }>('table_stats', `
    SELECT coalesce(s.n_live_tup, 0)::float8 AS live, coalesce(s.n_dead_tup, 0)::float8 AS dead,
      current_setting('autovacuum')::boolean AND current_setting('track_counts')::boolean
        AND NOT EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) o
          WHERE o.option_name = 'autovacuum_enabled' AND lower(o.option_value) IN ${OFF}) AS autovacuum
    FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
    WHERE c.oid = '${table}'::regclass`);
  const row = rows[0]!;
  return { liveRows: row.live, deadRows: row.dead, autovacuum: row.autovacuum };
}

export async function jobTableVacuum(ctx: PgContext, params: StoreParams<'jobTableVacuum'>): Promise<void> {
  const table = TABLES[params?.part ?? 'live'];
  // Another vacuum of the table is running (another process's, or autovacuum's):
  // SKIP_LOCKED would return at once, so spare the connection. A fleet whose workers
  // all pass the threshold together opens one vacuum connection, not one per process.
  const [running] = await ctx.query<{ running: boolean }>('vacuum_running', `
    SELECT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum WHERE relid = '${table}'::regclass) AS running`);
  if (running!.running) return;
  // On a connection of its own, not the pool's: a pass reads every index, seconds on a
  // large table, and with the default pool of one connection every claim and completion
  // would wait for it. Simple protocol, no transaction: VACUUM cannot run inside one.
  // ANALYZE too: where autovacuum is off nothing else gathers the table's statistics, and
  // without them the planner takes 'queued' for 0.5% of the rows, estimates a claim finds
  // one row, and sorts the whole queue (a bitmap scan of jobs_claim, then a sort spilling
  // to disk) on every claim instead of reading the index in order and stopping at LIMIT.
  // The live part's pass takes the tables its claims read and churn alongside it: the
  // concurrency keys' counts (a new row version per keyed start and end) and the rate
  // limits' log (pruned by age); both are small.
  const tables = params?.part === 'finished' ? table : `${table}, :schema.concurrency_keys, :schema.rate_limit_starts`;
  await ctx.ownConnection((client) => client.query(ctx.sql(`VACUUM (SKIP_LOCKED, ANALYZE) ${tables}`)));
}
