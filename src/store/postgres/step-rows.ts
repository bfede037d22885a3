import type pg from 'pg';
import type { StepRecord } from '../store.js';
import { dateOrNull, date, type PgContext } from './context.js';

/*
 * The `job_steps` rows (migration 22) on PostgreSQL: mapping, the fenced upsert, one read;
 * shared by steps.ts and messages.ts.
 */

/** A `job_steps` row as read by {@link STEP_COLUMNS}. */
export type StepRow = { name: string; seq: number; state: StepRecord['state']; attempt: number; tries: number; started_at: Date; finished_at: Date | null; result: string | null; error: string | null };

export const STEP_COLUMNS = 'name, seq, state, attempt, tries, started_at, finished_at, result::text AS result, error';

/**
 * The upsert of one step of job `$1` (`$3`…`$11` its fields), only while the job runs
 * under token `$2`: the job row is read FOR SHARE, so a rescue or takeover committing
 * meanwhile is waited for, and its new token then refuses the write.
 */
const SAVE = `
  INSERT INTO :schema.job_steps AS s (job_id, name, seq, state, attempt, tries, started_at, finished_at, result, error)
  SELECT j.id, $3, $4, $5, $6, $7, $8, $9, $10::json, $11 FROM :schema.jobs j
  WHERE j.id = $1 AND j.lease_token = $2 AND j.state = 'running' FOR SHARE OF j
  ON CONFLICT (job_id, name) DO UPDATE SET seq = excluded.seq, state = excluded.state, attempt = excluded.attempt, tries = excluded.tries,
    started_at = excluded.started_at, finished_at = excluded.finished_at, result = excluded.result, error = excluded.error
  RETURNING 1`;

/** The values of {@link SAVE} for step `s` of job `id` under `token`. */
const saveValues = (id: number, token: number, s: StepRecord): unknown[] =>
  [id, token, s.name, s.seq, s.state, s.attempt, s.tries, date(s.startedAt), dateOrNull(s.finishedAt), s.result, s.error];

/** Fenced upsert of one step on `client` (a transaction's) or the pool. @returns false when the lease was lost */
export async function saveStep(ctx: PgContext, client: pg.ClientBase | null, id: number, token: number, step: StepRecord): Promise<boolean> {
  const values = saveValues(id, token, step);
  const rows = client === null ? await ctx.query('step_save', SAVE, values) : (await client.query(ctx.sql(SAVE), values)).rows;
  return rows.length === 1;
}

/** The step of `client`'s transaction named `name` of job `id`, or undefined. */
export async function readStep(ctx: PgContext, client: pg.ClientBase, id: number, name: string): Promise<StepRecord | undefined> {
  const rows = (await client.query<StepRow>(ctx.sql(`SELECT ${STEP_COLUMNS} FROM :schema.job_steps WHERE job_id = $1 AND name = $2`), [id, name])).rows;
  return rows[0] && rowToStep(rows[0]);
}

export const rowToStep = (r: StepRow): StepRecord => ({
  name: r.name, seq: r.seq, state: r.state, attempt: r.attempt, tries: r.tries,
  startedAt: r.started_at.getTime(), finishedAt: r.finished_at === null ? null : r.finished_at.getTime(), result: r.result, error: r.error,
});
