import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Target } from './workload.js';

/** A fresh, empty database for one workload run. */
export interface BenchDatabase {
  /** The URL `createBaton({ database })` takes. */
  url: string;
  /** Removes it (files, schema…). Idempotent. */
  drop(): Promise<void>;
}

/**
 * The goals of the issue for one driver, by figure. A missing entry prints "—"
 * (the issue sets no target for that figure on that driver).
 */
export interface DriverTargets {
  drainC10?: Target;
  drainC50?: Target;
  latencySameProcess?: Target;
  latencyOtherProcess?: Target;
  cancel?: Target;
  handoff?: Target;
  peakRss?: Target;
}

/**
 * How a benchmark gets databases. Every workload takes a database factory rather
 * than a path, so drivers plug in here without touching the workloads.
 */
export interface BenchDriver {
  readonly name: string;
  /** Settings worth printing next to the figures (journal mode, host…). */
  readonly description: string;
  /** How a worker notices another process's commits (printed under the table). */
  readonly wakeUps: string;
  readonly targets: DriverTargets;
  /** Rejects with a clear message when the database cannot be reached. */
  check(): Promise<void>;
  /** Creates a fresh, empty database; `label` names it for debugging. */
  createDatabase(label: string): Promise<BenchDatabase>;
}

const SHARED_TARGETS: DriverTargets = {
  handoff: { op: '<', value: 1000, text: 'max < 1 s' },
};

/** SQLite: a new file in its own temp directory; dropping removes the directory. */
export const sqliteDriver: BenchDriver = {
  name: 'sqlite',
  description: 'SQLite file in a temp dir (better-sqlite3, WAL, synchronous=NORMAL)',
  wakeUps: "another process's commits are noticed by an inotify watch on the WAL file, with PRAGMA data_version polled every watchInterval (default 10 ms) as the fallback",
  targets: {
    ...SHARED_TARGETS,
    drainC10: { op: '>=', value: 10_000, text: '≥ 10,000 jobs/s' },
    latencySameProcess: { op: '<', value: 5, text: 'p99 < 5 ms' },
    cancel: { op: '<', value: 250, text: 'p99 < 250 ms' },
    peakRss: { op: '<', value: 150, text: '< 150 MB' },
  },
  async check() {},
  async createDatabase(label) {
    const dir = mkdtempSync(join(tmpdir(), `baton-bench-${label}-`));
    return {
      url: `sqlite:${join(dir, 'baton.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

/** The PostgreSQL server the bench uses: `BATON_BENCH_DATABASE_URL`. */
export const postgresUrl = process.env.BATON_BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** `postgresUrl` without its password, for printing. */
const shownUrl = (() => {
  try {
    const url = new URL(postgresUrl);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return postgresUrl;
  }
})();

/** Runs `fn` on a short-lived admin connection to `postgresUrl`. */
export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined); // a dropped admin connection surfaces through the query
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Schemas this process created and has not dropped yet (swept by {@link dropLeftoverSchemas}). */
const liveSchemas = new Set<string>();

/** Records a schema this process created, so {@link dropLeftoverSchemas} removes it if nothing else does. */
export function trackSchema(schema: string): void {
  liveSchemas.add(schema);
}

/** Drops a schema recorded by {@link trackSchema} (no-op when already dropped). */
export async function dropSchema(schema: string): Promise<void> {
  if (!liveSchemas.has(schema)) return;
  await withAdmin(async (client) => {
    // A killed child's backend may still hold a lock for a moment: wait for it, boundedly.
    await client.query(`SET lock_timeout = '30s'`);
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
  liveSchemas.delete(schema);
}

/** Drops every schema this process created that is still there (last resort on exit paths). */
export async function dropLeftoverSchemas(): Promise<void> {
  for (const schema of [...liveSchemas]) await dropSchema(schema).catch(() => undefined);
}

/**
 * PostgreSQL: each database is a schema of its own (`?schema=bench_<random>`) in
 * the database at `BATON_BENCH_DATABASE_URL`, created by Baton's migrations and
 * dropped (CASCADE) afterwards.
 */
let serverVersion = '';
export const postgresDriver: BenchDriver = {
  name: 'postgres',
  get description() {
    return `PostgreSQL${serverVersion && ` ${serverVersion}`} at ${shownUrl}, a schema per workload (pg pool of 10, LISTEN/NOTIFY)`;
  },
  wakeUps: "another process's commits are noticed by LISTEN/NOTIFY (triggers notify at commit; watchInterval unused), polling as the safety net",
  targets: {
    ...SHARED_TARGETS,
    drainC10: { op: '>=', value: 8_000, text: '≥ 8,000 jobs/s' },
    drainC50: { op: '>=', value: 8_000, text: '≥ 8,000 jobs/s' },
    latencyOtherProcess: { op: '<', value: 10, text: 'p99 < 10 ms' },
    cancel: { op: '<', value: 10, text: 'p99 < 10 ms' },
  },
  async check() {
    try {
      serverVersion = await withAdmin(async (client) => (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v);
    } catch (error) {
      const e = error as Error & { code?: string };
      throw new Error(`PostgreSQL at ${shownUrl} does not answer (${e.code ? `${e.code}: ` : ''}${e.message || String(error)}); start it or set BATON_BENCH_DATABASE_URL`);
    }
  },
  async createDatabase(_label) {
    const schema = `bench_${randomBytes(6).toString('hex')}`;
    trackSchema(schema);
    const url = new URL(postgresUrl);
    url.searchParams.set('schema', schema);
    return { url: url.toString(), drop: () => dropSchema(schema) };
  },
};

/** Drivers by `--driver` name (`all` runs every one of them). */
export const drivers: Record<string, BenchDriver> = {
  sqlite: sqliteDriver,
  postgres: postgresDriver,
};
