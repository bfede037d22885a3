import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh, empty database for one workload run. */
export interface BenchDatabase {
  /** The URL `createBaton({ database })` takes. */
  url: string;
  /** Removes it (files, schema…). Idempotent. */
  drop(): Promise<void>;
}

/**
 * How a benchmark gets databases. Every workload takes a database factory rather
 * than a path, so a PostgreSQL driver (a schema per run, dropped after) plugs in
 * here without touching the workloads.
 */
export interface BenchDriver {
  readonly name: string;
  /** Settings worth printing next to the figures (journal mode, host…). */
  readonly description: string;
  /** Creates a fresh, empty database; `label` names it for debugging. */
  createDatabase(label: string): Promise<BenchDatabase>;
}

/** SQLite: a new file in its own temp directory; dropping removes the directory. */
export const sqliteDriver: BenchDriver = {
  name: 'sqlite',
  description: 'SQLite file in a temp dir (better-sqlite3, WAL, synchronous=NORMAL)',
  async createDatabase(label) {
    const dir = mkdtempSync(join(tmpdir(), `baton-bench-${label}-`));
    return {
      url: `sqlite:${join(dir, 'baton.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

/** Drivers by `--driver` name. Add `postgres` here (e.g. from BATON_BENCH_POSTGRES_URL). */
export const drivers: Record<string, BenchDriver> = {
  sqlite: sqliteDriver,
};
