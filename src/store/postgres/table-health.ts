import type { JobTableStats } from '../store.js';
import type { PgContext } from './context.js';

/** The jobs table's health on PostgreSQL (dead rows, vacuum); see the Store interface for each contract. */

/** Reloption values PostgreSQL reads as false (its boolean input syntax, lower case). */
const OFF = "('off', 'false', 'f', 'no', 'n', '0')";

export async function jobTableStats(ctx: PgContext): Promise<JobTableStats> {
  const rows = await ctx.query<{ live: number; dead: number; autovacuum: boolean }>('table_stats', `
    SELECT coalesce(s.n_live_tup, 0)::float8 AS live, coalesce(s.n_dead_tup, 0)::float8 AS dead,
      current_setting('autovacuum')::boolean AND current_setting('track_counts')::boolean
        AND NOT EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) o
          WHERE o.option_name = 'autovacuum_enabled' AND lower(o.option_value) IN ${OFF}) AS autovacuum
    FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
    WHERE c.oid = ':schema.jobs'::regclass`);
  const row = rows[0]!;
  return { liveRows: row.live, deadRows: row.dead, autovacuum: row.autovacuum };
}

export async function jobTableVacuum(ctx: PgContext): Promise<void> {
  // Simple protocol, no transaction: VACUUM cannot run inside a transaction block.
  await ctx.query(null, 'VACUUM (SKIP_LOCKED) :schema.jobs');
}
