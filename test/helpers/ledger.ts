import Database from 'better-sqlite3';

/** One handler execution as recorded in the external ledger. Times are ms since the epoch. */
export interface LedgerRow {
  jobId: number;
  attempt: number;
  pid: number;
  startedAt: number;
  finishedAt: number | null;
}

/**
 * The external ledger of cases.md: every test handler writes a row when it starts
 * and stamps it when it returns, in a SQLite file of its own, so executions are
 * counted independently of Baton's bookkeeping. Safe across processes.
 */
export class Ledger {
  readonly #db: Database.Database;

  constructor(readonly path: string) {
    this.#db = new Database(path, { timeout: 10_000 });
    this.#db.pragma('journal_mode = WAL');
    this.#db.exec(`CREATE TABLE IF NOT EXISTS ledger (
      job_id INTEGER, attempt INTEGER, pid INTEGER, started_at INTEGER, finished_at INTEGER)`);
  }

  start(jobId: number, attempt: number): number {
    return Number(
      this.#db.prepare('INSERT INTO ledger (job_id, attempt, pid, started_at) VALUES (?, ?, ?, ?)').run(jobId, attempt, process.pid, Date.now())
        .lastInsertRowid,
    );
  }

  finish(rowId: number): void {
    this.#db.prepare('UPDATE ledger SET finished_at = ? WHERE rowid = ?').run(Date.now(), rowId);
  }

  rows(jobId?: number): LedgerRow[] {
    const sql = `SELECT job_id AS jobId, attempt, pid, started_at AS startedAt, finished_at AS finishedAt FROM ledger
      ${jobId === undefined ? '' : 'WHERE job_id = ?'} ORDER BY rowid`;
    return (jobId === undefined ? this.#db.prepare(sql).all() : this.#db.prepare(sql).all(jobId)) as LedgerRow[];
  }

  close(): void {
    this.#db.close();
  }
}

/** The most intervals open at one instant (an end at t closes before a start at t). */
export function maxOverlap(rows: LedgerRow[]): number {
  const edges = rows.flatMap((r) => [
    { at: r.startedAt, delta: 1 },
    { at: r.finishedAt!, delta: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let open = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (open += edge.delta));
  return most;
}
