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
  /** History: the slowest round's drain rate as a share of round 1's, in %. */
  historyWorstRound?: Target;
  /** Start-up: median ms from a worker process's start to ready to claim (plain node). */
  startup?: Target;
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
  historyWorstRound: { op: '>=', value: 90, text: '≥ 90% of the first rounds (blocks of 5)' },
  startup: { op: '<=', value: 150, text: '≤ 150 ms' },
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

/**
 * A Baton PostgreSQL URL (`postgres://…?schema=NAME`) split into the server's URL (no
 * query: Baton's own parameters mean nothing to a plain client) and the schema.
 */
function serverAndSchema(url: string): { server: string; schema: string } {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? 'baton';
  parsed.search = '';
  return { server: parsed.toString(), schema };
}

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

/** Runs `fn` on a short-lived admin connection to `serverUrl` (default `postgresUrl`). */
export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>, serverUrl = postgresUrl): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
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
    return `PostgreSQL${serverVersion && ` ${serverVersion}`} at ${shownUrl}, a schema per workload (default pool of 4 connections, LISTEN/NOTIFY)`;
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
    return { url: schemaUrl(postgresUrl, schema), drop: () => dropSchema(schema) };
  },
};

/** `serverUrl` with `?schema=` set: a Baton database URL for that schema. */
export function schemaUrl(serverUrl: string, schema: string): string {
  const url = new URL(serverUrl);
  url.searchParams.set('schema', schema);
  return url.toString();
}

/** Sizes and row counts of a Baton database's jobs table, as one bench figure set keeps them. */
export interface JobTableStorage {
  /** Bytes of the job tables' heaps (PostgreSQL: jobs and jobs_finished) or of the jobs table's B-tree (SQLite). */
  tableBytes: number;
  /** Bytes of each index of the job tables, by name. */
  indexBytes: Record<string, number>;
  /** Bytes of the whole database: the schema's relations (PostgreSQL), the file (SQLite). */
  totalBytes: number;
  /** Dead row versions of the live jobs' table (`pg_stat_user_tables.n_dead_tup`); null on SQLite, which has none. */
  deadRows: number | null;
}

/**
 * Reads the jobs table's size, its indexes' sizes and its dead rows in the database at
 * `url` (a Baton URL: `sqlite:<file>`, or `postgres://…?schema=…`), on a connection of
 * its own. PostgreSQL's dead rows are the statistics collector's (as the worker's table
 * vacuum sees them).
 */
export async function jobTableStorage(url: string): Promise<JobTableStorage> {
  if (url.startsWith('sqlite:')) {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    try {
      const rows = db.prepare(`SELECT d.name, m.type, sum(d.pgsize) AS bytes FROM dbstat d JOIN sqlite_schema m ON m.name = d.name WHERE m.tbl_name = 'jobs' GROUP BY d.name`).all() as Array<{ name: string; type: string; bytes: number }>;
      const total = db.prepare('SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()').get() as { bytes: number };
      return {
        tableBytes: rows.find((r) => r.type === 'table')?.bytes ?? 0,
        indexBytes: Object.fromEntries(rows.filter((r) => r.type === 'index').map((r) => [r.name, r.bytes])),
        totalBytes: total.bytes,
        deadRows: null,
      };
    } finally {
      db.close();
    }
  }
  const { server, schema } = serverAndSchema(url);
  return withAdmin(async (client) => {
    // The live jobs' table, and the finished jobs' one (migration 10) where it exists.
    const tables = [`"${schema}".jobs`, `"${schema}".jobs_finished`];
    const { rows } = await client.query<{ table_bytes: string; dead: string | null; total: string }>(
      `SELECT (SELECT sum(pg_relation_size(t)) FROM unnest($1::text[]) AS u(name), to_regclass(u.name) AS t WHERE t IS NOT NULL) AS table_bytes,
         (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = ($1::text[])[1]::regclass) AS dead,
         (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $2 AND c.relkind = 'r') AS total`,
      [tables, schema],
    );
    const indexes = await client.query<{ name: string; bytes: string }>(
      `SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid) AS bytes FROM pg_index
       WHERE indrelid IN (SELECT to_regclass(name) FROM unnest($1::text[]) AS u(name))`,
      [tables],
    );
    const row = rows[0]!;
    return {
      tableBytes: Number(row.table_bytes),
      indexBytes: Object.fromEntries(indexes.rows.map((r) => [r.name.replace(/^.*\./, ''), Number(r.bytes)])),
      totalBytes: Number(row.total),
      deadRows: row.dead === null ? null : Number(row.dead),
    };
  }, server);
}

/**
 * Counters of the PostgreSQL server behind a Baton URL that a round's figures depend
 * on besides Baton's own work: checkpoints so far (timed and requested), the WAL
 * position (bytes), and autovacuum's passes over the job tables. Null on SQLite.
 * Two readings' difference tells what happened between them.
 */
export interface ServerActivity {
  checkpoints: number;
  walBytes: number;
  autovacuums: number;
  /**
   * Buffers the server's backends wrote out themselves to make room (pg_stat_bgwriter's
   * buffers_backend): none while shared_buffers has free buffers, many once it is full
   * and the pages to evict are dirty.
   */
  backendWrites: number;
  /** Buffers allocated (pg_stat_bgwriter's buffers_alloc). */
  bufferAllocs: number;
}

/** Reads {@link ServerActivity} for the database at `url`, on a connection of its own. */
export async function serverActivity(url: string): Promise<ServerActivity | null> {
  if (url.startsWith('sqlite:')) return null;
  const { server, schema } = serverAndSchema(url);
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ checkpoints: string; wal: string; autovacuums: string | null; backend_writes: string; allocs: string }>(
      `SELECT (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter) AS checkpoints,
         (SELECT buffers_backend FROM pg_stat_bgwriter) AS backend_writes, (SELECT buffers_alloc FROM pg_stat_bgwriter) AS allocs,
         pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') AS wal,
         (SELECT sum(autovacuum_count) FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('jobs', 'jobs_finished')) AS autovacuums`,
      [schema],
    );
    const row = rows[0]!;
    return {
      checkpoints: Number(row.checkpoints),
      walBytes: Number(row.wal),
      autovacuums: Number(row.autovacuums ?? 0),
      backendWrites: Number(row.backend_writes),
      bufferAllocs: Number(row.allocs),
    };
  }, server);
}

/**
 * Removes every finished job of the database at `url` behind Baton's back, not timed:
 * PostgreSQL truncates `jobs_finished`; SQLite deletes the finished rows of `jobs`. What
 * the drains left in the live table (its dead rows, free space and index pages) stays.
 */
export async function clearFinishedJobs(url: string): Promise<void> {
  if (url.startsWith('sqlite:')) {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(url.slice('sqlite:'.length));
    try {
      db.prepare(`DELETE FROM jobs WHERE state IN ('completed', 'failed', 'cancelled')`).run();
    } finally {
      db.close();
    }
    return;
  }
  const { server, schema } = serverAndSchema(url);
  await withAdmin((client) => client.query(`TRUNCATE "${schema}".jobs_finished`), server);
}

/** Drivers by `--driver` name (`all` runs every one of them). */
export const drivers: Record<string, BenchDriver> = {
  sqlite: sqliteDriver,
  postgres: postgresDriver,
};
