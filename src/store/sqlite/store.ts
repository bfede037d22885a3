import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { systemClock, type Clock } from '../../clock.js';
import { DriverStore, type Operations } from '../driver-store.js';
import { checkSchema, runMigrations, type AppliedMigration, type Migration } from '../migrate.js';
import { DatabaseFileGoneError, type ClockReading, type StoreChange } from '../store.js';
import type { SqliteContext } from './context.js';
import * as jobLeases from './job-leases.js';
import * as jobBulk from './job-bulk.js';
import * as jobs from './jobs.js';
import * as leases from './leases.js';
import { migrations as sqliteMigrations } from './migrations/index.js';
import { type LockWait, LOCK_WAIT_REPORT_MS, retryWhileBusy, SYNC_BUSY_TIMEOUT_MS, whenUnlocked } from './busy.js';
import { watchChanges } from './notifier.js';
import { flatTransaction } from './transaction.js';
import * as queues from './queues.js';
import * as retention from './retention.js';
import * as tableHealth from './table-health.js';
import * as concurrencyKeys from './concurrency-keys.js';
import * as queueLimits from './queue-limits.js';
import * as rateLimits from './rate-limits.js';
import * as queueDeclarations from './queue-declarations.js';
import * as queuePauses from './queue-pauses.js';
import * as schedules from './schedules.js';
import * as services from './services.js';
import * as workers from './workers.js';
import * as steps from './steps.js';
import * as suspend from './suspend.js';
import * as messages from './messages.js';
import * as children from './children.js';

/** How long opening a file may wait synchronously for a lock (switching a new file to WAL), ms. */
const OPEN_BUSY_TIMEOUT_MS = 5000;

/** Options of the SQLite driver. */
export interface SqliteStoreOptions {
  /**
   * How long an operation waits for another process's write lock, in ms: between
   * event-loop turns (busy.ts), never blocking the loop longer than
   * {@link SYNC_BUSY_TIMEOUT_MS} at a time. As long as the default lease: a neighbour
   * holding the lock for a while (a VACUUM, a backup) delays a checkpoint or an outcome
   * write instead of failing it. @defaultValue 30000
   */
  busyTimeoutMs?: number;
  /**
   * Told when an operation has waited {@link LOCK_WAIT_REPORT_MS} for another process's
   * write lock, and again when that wait ends (busy.ts). @defaultValue none
   */
  onLockWait?: (wait: LockWait) => void;
  /** Migrations to apply (tests pass extra ones). @defaultValue the shipped ones */
  migrations?: Migration[];
  /**
   * Open the file for reading only: it must exist, nothing is written (no WAL
   * switch, no migration: {@link SqliteStore.schemaCheck} instead), and a write
   * fails with SQLITE_READONLY. Works on a file without write permission; in a
   * directory without it too (see {@link openReadOnly}). @defaultValue false
   */
  readOnly?: boolean;
}

/** Every operation of the SQLite driver, one file per concern. */
const operations: Operations<SqliteContext> = retryWhileBusy({ ...jobs, ...jobLeases, ...queues, ...retention, ...tableHealth, ...leases, ...services, ...schedules, ...workers, ...jobBulk, ...queuePauses, ...queueLimits, ...rateLimits, ...queueDeclarations, ...concurrencyKeys, ...steps, ...suspend, ...messages, ...children });

/**
 * The embedded driver: one better-sqlite3 connection to a file in WAL mode with a
 * busy timeout, so several processes on one host can share it. Multi-statement
 * writes run in `BEGIN IMMEDIATE` transactions, single writes are one statement.
 * Synchronous under the hood; methods return promises to match {@link Store}.
 * Time is this host's clock: every process sharing the file runs on this host.
 */
export class SqliteStore extends DriverStore<SqliteContext> {
  readonly driver = 'sqlite';
  /** One connection, one writer: one claim at a time. */
  readonly claimsInFlight = 1;
  readonly clock: Clock = systemClock;
  readonly #db: Database.Database;
  readonly #migrations: Migration[];
  readonly #busyTimeoutMs: number;
  /** Names the file in messages (a read-only snapshot's own name is ":memory:"). */
  readonly #where: string;
  /** The opened file's identity (device and inode), for {@link schemaCheck}; undefined in memory. */
  readonly #file: { path: string; dev: number; ino: number } | undefined;

  /**
   * @param filename - path of the database file (created when missing), or ":memory:"
   * @throws the better-sqlite3 error (StoreError through the instrumented wrapper) when the file cannot be opened
   */
  constructor(filename: string, options: SqliteStoreOptions = {}) {
    const busyTimeoutMs = options.busyTimeoutMs ?? 30_000;
    refuseDirectory(filename);
    let db: Database.Database;
    if (options.readOnly) {
      db = openReadOnly(filename, OPEN_BUSY_TIMEOUT_MS);
    } else {
      // Opening waits for the lock synchronously (once, at start: switching a new file to
      // WAL needs it); afterwards a statement gives up within a few ms and busy.ts retries.
      db = new Database(filename, { timeout: OPEN_BUSY_TIMEOUT_MS });
      // A new file gives pages freed by deleted jobs back to the file system
      // (retention.ts reclaims them after each delete batch); it can only be set
      // before the first table exists. Older files keep reusing free pages instead.
      if (isEmpty(db)) db.pragma('auto_vacuum = INCREMENTAL');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    db.pragma(`busy_timeout = ${SYNC_BUSY_TIMEOUT_MS}`);
    const statements = new Map<string, Database.Statement>();
    const sql = (text: string): Database.Statement => {
      let statement = statements.get(text);
      if (!statement) statements.set(text, (statement = db.prepare(text)));
      return statement;
    };
    super(
      {
        db,
        busyTimeoutMs,
        onLockWait: options.onLockWait,
        sql,
        transaction: (fn) => flatTransaction(db, sql, fn),
      },
      operations,
    );
    this.#db = db;
    this.#where = `file ${JSON.stringify(filename)}`;
    this.#file = db.memory ? undefined : { path: resolve(db.name), ...identity(statSync(db.name)) };
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#migrations = options.migrations ?? sqliteMigrations;
  }

  async clockSync(): Promise<ClockReading> {
    return { offsetMs: 0, roundTripMs: 0 };
  }

  async migrate(): Promise<void> {
    const db = this.#db;
    await whenUnlocked(() => runMigrations(this.#migrations, this.#where, async (fn) => {
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

  /**
   * As the Store's, and first: the file this connection opened is still the one at its
   * path. A file deleted or replaced under a running process stays readable and
   * writable through the open connection, so every write would go where no other
   * process (and no restart of this one) sees it.
   * @throws DatabaseFileGoneError naming the file when it is gone from its path or another file took its place
   */
  async schemaCheck(): Promise<void> {
    if (this.#file) {
      const now = statSync(this.#file.path, { throwIfNoEntry: false });
      if (!now || now.dev !== this.#file.dev || now.ino !== this.#file.ino) {
        throw new DatabaseFileGoneError(`the database file ${JSON.stringify(this.#file.path)} was ${now ? 'replaced' : 'deleted'} after this process opened it: its writes go to a file no other process sees; restart it`);
      }
    }
    const db = this.#db;
    const ledger = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'baton_migrations'").get();
    const rows = ledger ? (db.prepare('SELECT version, name, breaking FROM baton_migrations').all() as Array<{ version: number; name: string; breaking: number }>) : [];
    checkSchema(this.#migrations, this.#where, rows.map((r) => ({ ...r, breaking: r.breaking === 1 })));
  }

  watchChanges(params: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void {
    return watchChanges(this.#db, params);
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}

/** A file's device and inode: what stays the same while the file at a path is the same file. */
const identity = ({ dev, ino }: { dev: number; ino: number }) => ({ dev, ino });

/**
 * Refuses a path that names a directory (better-sqlite3 says only "unable to open
 * database file", or "disk I/O error" read-only).
 * @throws Error naming the path and suggesting a file in it
 */
function refuseDirectory(filename: string): void {
  if (filename !== ':memory:' && statSync(filename, { throwIfNoEntry: false })?.isDirectory()) {
    throw new Error(`${filename} is a directory, not a database file (give a file in it, e.g. sqlite:${join(filename, 'baton.db')})`);
  }
}

/**
 * Opens `filename` read-only (better-sqlite3 `readonly`, the file must exist). A
 * WAL-mode file is read through its `-shm` index, which SQLite creates beside it
 * when missing; in a directory the process cannot write (a read-only mount, a
 * copy owned by another user) it cannot, and the read fails (SQLITE_READONLY_DIRECTORY).
 * Then, when no `-wal` file exists (so the main file holds every committed
 * transaction), the file is read into memory and opened from there: a snapshot,
 * read-only too. A `-wal` appearing meanwhile means a writer is at work: refused.
 * @throws Error naming the file when it does not exist or cannot be read
 */
function openReadOnly(filename: string, busyTimeoutMs: number): Database.Database {
  if (filename !== ':memory:' && !existsSync(filename)) {
    throw new Error(`the file does not exist; reading does not create one (a worker, \`baton migrate\` or an enqueue does)`);
  }
  const db = new Database(filename, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
  try {
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  } catch (error) {
    db.close();
    const code = (error as { code?: unknown }).code;
    if ((code !== 'SQLITE_READONLY_DIRECTORY' && code !== 'SQLITE_CANTOPEN') || existsSync(`${filename}-wal`)) throw error;
  }
  const image = readFileSync(filename);
  if (existsSync(`${filename}-wal`)) throw new Error(`${filename} is being written by another process and its directory is not writable, so it cannot be read consistently; retry, or read it with write access to its directory`);
  // Bytes 18-19: the file format's write and read versions, 2 in WAL mode. An image in
  // memory has no -shm to index a WAL: mark it a rollback-journal database.
  if (image.length >= 20 && image[18] === 2) image[18] = image[19] = 1;
  const snapshot = new Database(image, { readonly: true });
  snapshot.prepare('SELECT count(*) FROM sqlite_master').get();
  return snapshot;
}

/** True for a file without any schema object yet (new, or created empty). */
function isEmpty(db: Database.Database): boolean {
  return (db.prepare('SELECT count(*) AS n FROM sqlite_master').get() as { n: number }).n === 0;
}
