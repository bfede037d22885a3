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
   * length. `hot` picks the pool of claims, completions and lease renewals
   * (synchronous_commit off).
   */
  query<R extends pg.QueryResultRow>(name: string | null, text: string, values?: unknown[], options?: { hot?: boolean }): Promise<R[]>;
  /** Runs `fn` on one pool connection inside BEGIN … COMMIT (ROLLBACK when it throws). */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

/** A ms-since-the-epoch value as a parameter of a timestamptz column. */
export const date = (ms: number): Date => new Date(ms);

/** Like {@link date}, null staying null. */
export const dateOrNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));
