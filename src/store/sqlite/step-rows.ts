import type { StepRecord } from '../store.js';
import type { SqliteContext } from './context.js';

/*
 * The `job_steps` rows (migration 22) on SQLite: mapping, the fence, the upsert; shared by steps.ts and messages.ts.
 */

/** A `job_steps` row as SQLite returns it (times in ms). */
export type StepRow = { name: string; seq: number; state: StepRecord['state']; attempt: number; tries: number; started_at: number; finished_at: number | null; result: string | null; error: string | null };

/** The `job_steps` row as a StepRecord. */
export const rowToStep = (r: StepRow): StepRecord => ({
  name: r.name, seq: r.seq, state: r.state, attempt: r.attempt, tries: r.tries, startedAt: r.started_at, finishedAt: r.finished_at, result: r.result, error: r.error,
});

/** Whether job `id` is running under `token` (the fence of a step write), read inside the caller's transaction. */
export const holds = (ctx: SqliteContext, id: number, token: number): boolean =>
  ctx.sql("SELECT 1 FROM jobs WHERE id = ? AND lease_token = ? AND state = 'running'").get(id, token) !== undefined;

/** Inserts or replaces step `step` of job `id` (no fence: the caller's transaction checked it). */
export function saveStep(ctx: SqliteContext, id: number, step: StepRecord): void {
  ctx.sql(`INSERT INTO job_steps (job_id, name, seq, state, attempt, tries, started_at, finished_at, result, error)
      VALUES (@id, @name, @seq, @state, @attempt, @tries, @startedAt, @finishedAt, @result, @error)
    ON CONFLICT (job_id, name) DO UPDATE SET seq = excluded.seq, state = excluded.state, attempt = excluded.attempt, tries = excluded.tries,
      started_at = excluded.started_at, finished_at = excluded.finished_at, result = excluded.result, error = excluded.error`).run({ id, ...step });
}
