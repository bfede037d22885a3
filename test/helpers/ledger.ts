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
 * One execution of a step's function (kit task `stepped`), as recorded in the ledger's
 * `steps` table. `token` is the run's lease token: with `pid`, the run id. Times are ms
 * since the epoch; `savedAt` is stamped when `ctx.step` returned the result this
 * execution produced (the fenced save was accepted); `abortedAt`/`abortReason`/
 * `abortMessage` when the step's signal aborted (at that instant, from its listener).
 */
export interface StepRow {
  jobId: number;
  step: string;
  attempt: number;
  pid: number;
  token: number;
  startedAt: number;
  finishedAt: number | null;
  savedAt: number | null;
  abortedAt: number | null;
  abortReason: string | null;
  abortMessage: string | null;
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
    this.#db.exec(`CREATE TABLE IF NOT EXISTS steps (
      job_id INTEGER, step TEXT, attempt INTEGER, pid INTEGER, token INTEGER, started_at INTEGER, finished_at INTEGER,
      saved_at INTEGER, aborted_at INTEGER, abort_reason TEXT, abort_message TEXT)`);
  }

  /** A step's function started in this process; returns the row to stamp. */
  stepStart(jobId: number, step: string, attempt: number, token: number): number {
    return Number(
      this.#db
        .prepare('INSERT INTO steps (job_id, step, attempt, pid, token, started_at) VALUES (?, ?, ?, ?, ?, ?)')
        .run(jobId, step, attempt, process.pid, token, Date.now()).lastInsertRowid,
    );
  }

  /** The step's function returned. */
  stepEnd(rowId: number): void {
    this.#db.prepare('UPDATE steps SET finished_at = ? WHERE rowid = ?').run(Date.now(), rowId);
  }

  /** `ctx.step` returned this execution's result: its save was accepted. */
  stepSaved(rowId: number): void {
    this.#db.prepare('UPDATE steps SET saved_at = ? WHERE rowid = ?').run(Date.now(), rowId);
  }

  /** The step's signal aborted at `at`, with `reason` (a Baton abort error: its `code` and message). */
  stepAborted(rowId: number, at: number, reason: unknown): void {
    const r = reason as { code?: string; message?: string } | undefined;
    this.#db.prepare('UPDATE steps SET aborted_at = ?, abort_reason = ?, abort_message = ? WHERE rowid = ?').run(at, r?.code ?? String(reason), r?.message ?? null, rowId);
  }

  stepRows(jobId?: number): StepRow[] {
    const sql = `SELECT job_id AS jobId, step, attempt, pid, token, started_at AS startedAt, finished_at AS finishedAt, saved_at AS savedAt,
      aborted_at AS abortedAt, abort_reason AS abortReason, abort_message AS abortMessage FROM steps
      ${jobId === undefined ? '' : 'WHERE job_id = ?'} ORDER BY rowid`;
    return (jobId === undefined ? this.#db.prepare(sql).all() : this.#db.prepare(sql).all(jobId)) as StepRow[];
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
