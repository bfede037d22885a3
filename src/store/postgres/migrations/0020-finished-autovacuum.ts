import type { Migration } from '../../migrate.js';

/**
 * Autovacuum of `jobs_finished` at a fixed size, not a share of the history (issue 11:
 * a hot path independent of history, on a server with autovacuum on). `jobs_finished`
 * only grows between pruning passes: every finished job is one insert. PostgreSQL's
 * defaults vacuum an insert-only table once 1,000 + 20% of its rows are new
 * (autovacuum_vacuum_insert_threshold, autovacuum_vacuum_insert_scale_factor), to set
 * the visibility map and freeze; with 3M finished jobs kept that is one pass per 600,000
 * completions, writing and logging every page of them in one go, beside the drains (the
 * history bench on a stock-settings cluster: the rounds such a pass overlapped were the
 * slow ones, and the passes grew with the history). Here a pass comes every 50,000
 * inserts whatever the table's size, so each pass does the same work however much
 * history is kept. The dead-row and analyze thresholds stay PostgreSQL's: a pruning
 * pass's deletes are vacuumed at 20% of the table as on any table, and an ANALYZE costs
 * the same sample whatever the size. Per table; takes effect only where autovacuum is on.
 */
export const migration: Migration = {
  version: 20,
  name: 'finished-autovacuum',
  sql: `
    ALTER TABLE :schema.jobs_finished SET (
      autovacuum_vacuum_insert_threshold = 50000,
      autovacuum_vacuum_insert_scale_factor = 0
    );
  `,
};
