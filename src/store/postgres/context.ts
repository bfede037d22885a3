import type pg from 'pg';

/**
 * What the PostgreSQL operations (jobs.ts, leases.ts, …) work with. Statement
 * texts use `:schema` (the quoted schema) and `:channel` (the NOTIFY channel
 * prefix), filled in by `sql`.
 */
export interface PgContext {
  readonly schema: string;
  /** The statement text with `:schema` and `:channel` filled in (cached per text). */
  sql(text: string): string;
  /**
   * Runs one statement on the pool and returns its rows. With a `name` (a short
   * label such as "claim"), as a prepared statement whose server-side name is the
   * label plus a hash of the filled-in text: short and unique whatever the schema's
   * length — or unnamed when the store goes through PgBouncer (`pgbouncer`), whose
   * transaction pooling cannot keep a prepared statement on a server connection.
   */
  query<R extends pg.QueryResultRow>(name: string | null, text: string, values?: unknown[]): Promise<R[]>;
  /** Runs `fn` on one pool connection inside BEGIN … COMMIT (ROLLBACK when it throws). */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` on a connection of its own, outside the pool, closed after: to the direct
   * URL when the store has one (through PgBouncer a long statement would hold one of its
   * few server connections as long), else to the pool's URL. For a statement that may
   * take seconds (VACUUM) and must not take a pool connection from the hot path.
   */
  ownConnection<T>(fn: (client: pg.ClientBase) => Promise<T>): Promise<T>;
}

/** A ms-since-the-epoch value as a parameter of a timestamptz column. */
export const date = (ms: number): Date => new Date(ms);

/** Like {@link date}, null staying null. */
export const dateOrNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

/**
 * A CTE that turns `synchronous_commit` off for the statement's own transaction
 * only (`set_config(…, true)`, as SET LOCAL): the claim, the batched completion and
 * the lease renewal name it in their FROM, so the commit does not wait for the WAL
 * flush. A crash of the database server itself may then forget the last few
 * milliseconds of them, and those jobs simply run again (at-least-once, as after
 * any crash); enqueues, failures, cancels and checkpoints stay durable. Set per
 * transaction rather than per connection, it leaves no session state behind, so
 * those statements share the one pool and pass through PgBouncer's transaction
 * pooling. The CTE calls a volatile function, so PostgreSQL runs it once and never
 * inlines it; a row is written only joined with its one row, so the setting is in
 * force whenever the statement writes.
 */
export const ASYNC_COMMIT = "async_commit AS (SELECT set_config('synchronous_commit', 'off', true))";
