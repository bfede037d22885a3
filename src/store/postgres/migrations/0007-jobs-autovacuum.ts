import type { Migration } from '../../migrate.js';

/**
 * Autovacuum settings of the jobs table, a queue table that churns: every job is
 * inserted, updated at least twice (claim, completion) and later deleted, each
 * update and delete leaving a dead row version in the table and in every index it
 * touched. PostgreSQL's defaults vacuum a table once 50 + 20% of its rows are dead
 * (autovacuum_vacuum_threshold, autovacuum_vacuum_scale_factor), throttled by cost
 * delay: with 1M finished jobs kept that is 200k dead rows before a pass, and passes
 * that fall behind a queue draining thousands of jobs a second. These vacuum at
 * 1,000 + 1% dead rows (and 1,000 + 1% inserted, for the visibility map), analyze at
 * 1,000 + 2% changed, and run unthrottled as a manual VACUUM does. Per table, so
 * nothing else on the server changes. They take effect only where autovacuum is on;
 * where it is off, the worker's table vacuum (src/maintenance/vacuum.ts) cleans the
 * table instead. PostgreSQL only: SQLite has no dead rows.
 */
export const migration: Migration = {
  version: 7,
  name: 'jobs-autovacuum',
  sql: `
    ALTER TABLE :schema.jobs SET (
      autovacuum_vacuum_threshold = 1000,
      autovacuum_vacuum_scale_factor = 0.01,
      autovacuum_vacuum_insert_threshold = 1000,
      autovacuum_vacuum_insert_scale_factor = 0.01,
      autovacuum_analyze_threshold = 1000,
      autovacuum_analyze_scale_factor = 0.02,
      autovacuum_vacuum_cost_delay = 0
    );
  `,
};
