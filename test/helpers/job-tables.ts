import type { NewJob } from '../../src/store/store.js';
import type { tempDatabase } from './db.js';
import { rawQuery } from './raw.js';

/**
 * What the tests of the two job tables (`jobs` and `jobs_finished`, on each driver) share:
 * a plain job to insert, and where each job's row is.
 */

/** A queued job of task `t` in queue `default`, payload `{ n }`, due at once, one attempt. */
export const tableJob = (n: number, over: Partial<NewJob> = {}): NewJob => ({
  queue: 'default',
  task: 't',
  payload: JSON.stringify({ n }),
  priority: 0,
  runAt: 0,
  maxAttempts: 1,
  timeoutMs: null,
  key: null,
  ...over,
});

/** `id:state` of every row of `jobs` (live) and of `jobs_finished` (finished), by id. */
export async function rowsByTable(db: ReturnType<typeof tempDatabase>): Promise<{ live: string[]; finished: string[] }> {
  const ids = async (table: string) => (await rawQuery<{ id: string | number; state: string }>(db, `SELECT id, state FROM ${table} ORDER BY id`)).map((r) => `${r.id}:${r.state}`);
  return { live: await ids('jobs'), finished: await ids('jobs_finished') };
}
