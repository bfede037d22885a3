import type { JobState } from '../../job/types.js';
import type { SqliteContext } from './context.js';
import { JOB_COLUMNS } from './migrations/job-table.js';
import { FRESH_STEPS, RETRIED } from './timeline.js';

/**
 * SQLite's two job tables (migration 25): `jobs` holds the queued and running jobs,
 * `jobs_finished` the completed, failed and cancelled ones, and `jobs_all` is both as
 * one. Finishing a job moves it out of `jobs` by itself (trigger `jobs_finish`: any
 * UPDATE setting a finished state); a retry moves it back here.
 */

/**
 * An `INSERT INTO jobs_finished … SELECT` of the rows of `jobs` (alias `j`) that `from`
 * and `where` pick, with `set`'s values (by column; the others copied), returning their ids: the first half of a move
 * out of `jobs` written as statements, not by the `jobs_finish` trigger (the hot
 * completion: the row is written once, where the trigger's UPDATE writes it twice). The
 * caller then deletes the returned ids from `jobs` ({@link DELETE_MOVED}).
 */
export function finishedInsert(set: Partial<Record<(typeof JOB_COLUMNS)[number], string>>, from: string, where: string): string {
  const values = JOB_COLUMNS.map((c) => set[c] ?? `j.${c}`);
  return `INSERT INTO jobs_finished (${JOB_COLUMNS.join(', ')}) SELECT ${values.join(', ')} FROM ${from} WHERE ${where} RETURNING id`;
}

/** Deletes from `jobs` the rows of `@ids` (a JSON array) that {@link finishedInsert} copied. */
export const DELETE_MOVED = 'DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(@ids))';

/** The live states: the jobs of `jobs`. */
const LIVE: readonly JobState[] = ['queued', 'running'];

/**
 * The table a read filtered to `states` needs: `jobs` when they are all live,
 * `jobs_finished` when all finished, else `jobs_all` (a UNION ALL view whose WHERE,
 * ORDER BY and LIMIT SQLite applies to each table). Naming the one table keeps a
 * listing of one state off the other table's scan.
 * @param states - the filter's states; empty or absent: every state
 */
export function jobTable(states: readonly JobState[] | undefined): 'jobs' | 'jobs_finished' | 'jobs_all' {
  if (!states || states.length === 0) return 'jobs_all';
  const live = states.filter((s) => LIVE.includes(s)).length;
  return live === states.length ? 'jobs' : live === 0 ? 'jobs_finished' : 'jobs_all';
}

/**
 * Moves finished job `id` back to `jobs` as queued (a manual retry, `fresh` clearing its
 * checkpoint, progress and step log), in the caller's write transaction: the row is
 * copied as it is, deleted from `jobs_finished` (its steps and messages stay: the row is
 * in `jobs`), then updated by RETRIED, whose change of state counts it in its
 * concurrency key (`jobs_key_state`) as the retry of one table did.
 * @returns whether a finished row `id` was there to move
 */
export function moveBack(ctx: SqliteContext, id: number, now: number, fresh: boolean): boolean {
  const copied = ctx.sql('INSERT INTO jobs SELECT * FROM jobs_finished WHERE id = ?').run(id).changes === 1;
  if (!copied) return false;
  ctx.sql('DELETE FROM jobs_finished WHERE id = ?').run(id);
  ctx.sql(`UPDATE jobs SET ${RETRIED} WHERE id = @id`).run({ id, now, fresh: fresh ? 1 : 0 });
  if (fresh) ctx.sql(FRESH_STEPS).run({ id, fresh: 1 });
  return true;
}
