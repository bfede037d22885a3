import Database from 'better-sqlite3';
import { systemClock, type Clock } from '../../clock.js';
import { DriverStore, type Operations } from '../driver-store.js';
import { runMigrations, type AppliedMigration, type Migration } from '../migrate.js';
import type { ClockReading, StoreChange } from '../store.js';
import type { SqliteContext } from './context.js';
import * as jobLeases from './job-leases.js';
import * as jobs from './jobs.js';
import * as leases from './leases.js';
import { migrations as sqliteMigrations } from './migrations/index.js';
import { retryWhileBusy, SYNC_BUSY_TIMEOUT_MS, whenUnlocked } from './busy.js';
import { watchChanges } from './notifier.js';
import * as queues from './queues.js';
import * as schedules from './schedules.js';
import * as services from './services.js';
import * as workers from './workers.js';

/** Options of the SQLite driver. */
export interface SqliteStoreOptions {
  /**
   * How long an operation waits for another process's write lock, in ms: between
   * event-loop turns (busy.ts), never blocking the loop longer than
   * {@link SYNC_BUSY_TIMEOUT_MS} at a time. @defaultValue 5000
   */
  busyTimeoutMs?: number;
  /** Migrations to apply (tests pass extra ones). @defaultValue the shipped ones */
  migrations?: Migration[];
}

/** Every operation of the SQLite driver, one file per concern. */
const operations: Operations<SqliteContext> = retryWhileBusy({ ...jobs, ...jobLeases, ...queues, ...leases, ...services, ...schedules, ...workers });

/**
 * The embedded driver: one better-sqlite3 connection to a file in WAL mode with a
 * busy timeout, so several processes on one host can share it. Multi-statement
 * writes run in `BEGIN IMMEDIATE` transactions, single writes are one statement.
 * Synchronous under the hood; methods return promises to match {@link Store}.
 * Time is this host's clock: every process sharing the file runs on this host.
 */
export class SqliteStore extends DriverStore<SqliteContext> {
  readonly driver = 'sqlite';
  readonly clock: Clock = systemClock;
  readonly #db: Database.Database;
  readonly #migrations: Migration[];
  readonly #busyTimeoutMs: number;

  /**
   * @param filename - path of the database file (created when missing), or ":memory:"
   * @throws the better-sqlite3 error (StoreError through the instrumented wrapper) when the file cannot be opened
   */
  constructor(filename: string, options: SqliteStoreOptions = {}) {
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    // Opening waits for the lock synchronously (once, at start: switching a new file to
    // WAL needs it); afterwards a statement gives up within a few ms and busy.ts retries.
    const db = new Database(filename, { timeout: busyTimeoutMs });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma(`busy_timeout = ${SYNC_BUSY_TIMEOUT_MS}`);
    const statements = new Map<string, Database.Statement>();
    super(
      {
        db,
        busyTimeoutMs,
        sql(text) {
          let statement = statements.get(text);
          if (!statement) statements.set(text, (statement = db.prepare(text)));
          return statement;
        },
        transaction: (fn) => db.transaction(fn).immediate(),
      },
      operations,
    );
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#migrations = options.migrations ?? sqliteMigrations;
  }

  async clockSync(): Promise<ClockReading> {
    return { offsetMs: 0, roundTripMs: 0 };
  }

  async migrate(): Promise<void> {
    const db = this.#db;
    await whenUnlocked(() => runMigrations(this.#migrations, `file ${JSON.stringify(db.name)}`, async (fn) => {
      db.exec('BEGIN IMMEDIATE'); // the write lock: one migrator at a time across processes
      try {
        const value = await fn({
          async applied() {
            db.exec(`CREATE TABLE IF NOT EXISTS baton_migrations (
              version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking INTEGER NOT NULL DEFAULT 0, applied_at INTEGER NOT NULL)`);
            const rows = db.prepare('SELECT version, name, breaking FROM baton_migrations').all() as Array<{ version: number; name: string; breaking: number }>;
            return rows.map((r): AppliedMigration => ({ ...r, breaking: r.breaking === 1 }));
          },
          async exec(sql) {
            db.exec(sql);
          },
          async record(m) {
            db.prepare('INSERT INTO baton_migrations (version, name, breaking, applied_at) VALUES (?, ?, ?, ?)').run(m.version, m.name, m.breaking ? 1 : 0, Date.now());
          },
        });
        db.exec('COMMIT');
        return value;
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw error;
      }
    }), this.#busyTimeoutMs);
  }

  watchChanges(params: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void {
    return watchChanges(this.#db, params);
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}
