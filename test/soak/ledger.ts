/**
 * The soak's external ledger: an append-only record, kept apart from Baton's tables, of
 * what the fleet's handlers, producer, canceller, lock sections, sampler and nemesis did
 * (events: ledger-events.ts).
 *
 * Layout: a directory of SQLite files (better-sqlite3, WAL), ONE FILE PER WRITING PROCESS
 * (`<pid>-<role>.db`). Not one shared file: the nemesis freezes processes (SIGSTOP) for
 * longer than a lease, and a process frozen inside a write to a shared file would hold its
 * write lock and stall every other writer of the fleet — the soak would measure the
 * ledger, not Baton. With a file each, a writer never waits on another, a SIGKILL loses at
 * most the event being written, and the reader merges the files by time.
 */
import Database from 'better-sqlite3';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LedgerEntry, LedgerEvent } from './ledger-events.js';


/**
 * One process's writer. Every {@link LedgerWriter.record} is one committed INSERT
 * (WAL, synchronous NORMAL: it survives the process being killed right after).
 */
export class LedgerWriter {
  readonly #db: Database.Database;
  readonly #insert: Database.Statement;

  /**
   * Opens (creates) this process's file in `dir`, made if missing.
   * @param role - names the writer in the file name (`worker`, `producer`, `nemesis`, …): letters, digits, `-`
   * @throws when `role` has other characters, or the file cannot be created
   */
  constructor(readonly dir: string, role: string) {
    if (!/^[A-Za-z0-9-]+$/.test(role)) throw new Error(`ledger role must be letters, digits and '-': ${JSON.stringify(role)}`);
    mkdirSync(dir, { recursive: true });
    this.#db = new Database(join(dir, `${process.pid}-${role}.db`));
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.exec('CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, pid INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL)');
    this.#insert = this.#db.prepare('INSERT INTO events (at, pid, kind, body) VALUES (?, ?, ?, ?)');
  }

  /**
   * Appends `event`, stamped with `at` (default: now, `Date.now()`) and this process's pid.
   * @param at - when it happened, ms since the epoch, when not now (e.g. a fault recorded after it ended)
   */
  record(event: LedgerEvent, at: number = Date.now()): void {
    this.#insert.run(at, process.pid, event.kind, JSON.stringify(event));
  }

  /** Closes the file; later records throw. */
  close(): void {
    this.#db.close();
  }
}

/**
 * Reads every file of the ledger in `dir` (read-only, so a writer still running is not
 * disturbed) into one list ordered by time, then pid, then each file's own order.
 * @returns [] when `dir` has no ledger file
 */
export function readLedger(dir: string): LedgerEntry[] {
  const entries: LedgerEntry[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.db')).sort()) {
    const db = new Database(join(dir, file), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT seq, at, pid, body FROM events ORDER BY seq').all() as Array<{ seq: number; at: number; pid: number; body: string }>;
      for (const row of rows) entries.push({ ...(JSON.parse(row.body) as LedgerEvent), at: row.at, pid: row.pid, seq: row.seq });
    } finally {
      db.close();
    }
  }
  return entries.sort((a, b) => a.at - b.at || a.pid - b.pid || a.seq - b.seq);
}
