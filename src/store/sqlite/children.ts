import type { Job } from '../../job/types.js';
import type { ChildRecord, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { insertMany } from './jobs.js';
import { holds, saveStep } from './step-rows.js';

export async function jobEnqueueChildren(ctx: SqliteContext, { id, token, attempt, children, now }: StoreParams<'jobEnqueueChildren'>): Promise<Array<{ childId: number; inserted: Job | null }> | false> {
  return ctx.transaction(() => {
    if (!holds(ctx, id, token)) return false;
    const storedStep = ctx.sql("SELECT result FROM job_steps WHERE job_id = ? AND name = ? AND state = 'completed'");
    const out: Array<{ childId: number; inserted: Job | null } | undefined> = children.map((c) => {
      const stored = storedStep.get(id, c.step) as { result: string } | undefined;
      return stored ? { childId: Number(stored.result), inserted: null } : undefined;
    });
    const fresh = children.map((c, i) => ({ c, i })).filter(({ i }) => out[i] === undefined);
    const inserted = insertMany(ctx, fresh.map(({ c }) => ({ ...c.child, key: null })), now);
    // A child a key strategy cancelled on insert is in jobs_finished already.
    const adopt = [ctx.sql('UPDATE jobs SET parent_id = ?, parent_step = ? WHERE id = ?'), ctx.sql('UPDATE jobs_finished SET parent_id = ?, parent_step = ? WHERE id = ?')];
    fresh.forEach(({ c, i }, n) => {
      const childId = inserted[n]!.job.id;
      for (const statement of adopt) statement.run(id, c.step, childId);
      saveStep(ctx, id, { name: c.step, seq: c.seq, state: 'completed', attempt, tries: 1, startedAt: now, finishedAt: now, result: String(childId), error: null });
      out[i] = { childId, inserted: { ...inserted[n]!.job, parentId: id } };
    });
    return out as Array<{ childId: number; inserted: Job | null }>;
  });
}

export async function jobChildren(ctx: SqliteContext, { id }: StoreParams<'jobChildren'>): Promise<ChildRecord[]> {
  return ctx.sql(`SELECT id, task, state, result,
      CASE state WHEN 'failed' THEN json_extract(errors, '$[#-1].message') WHEN 'cancelled' THEN cancel_reason END AS error
    FROM jobs_all WHERE parent_id = ? ORDER BY id`).all(id) as ChildRecord[];
}

/** SQLite: the change watch sees every commit; nothing to register. */
export async function finishedListen(_ctx: SqliteContext, _params: StoreParams<'finishedListen'>): Promise<void> {}

/** SQLite: nothing was registered. */
export async function finishedUnlisten(_ctx: SqliteContext, _params: StoreParams<'finishedUnlisten'>): Promise<void> {}
