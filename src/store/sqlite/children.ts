import type { Job } from '../../job/types.js';
import type { ChildRecord, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { insertMany } from './jobs.js';
import { holds, saveStep } from './step-rows.js';

export async function jobEnqueueChild(ctx: SqliteContext, { id, token, step, seq, attempt, child, now }: StoreParams<'jobEnqueueChild'>): Promise<{ childId: number; inserted: Job | null } | false> {
  return ctx.transaction(() => {
    if (!holds(ctx, id, token)) return false;
    const stored = ctx.sql("SELECT result FROM job_steps WHERE job_id = ? AND name = ? AND state = 'completed'").get(id, step) as { result: string } | undefined;
    if (stored) return { childId: Number(stored.result), inserted: null };
    const [inserted] = insertMany(ctx, [{ ...child, key: null }], now);
    const childId = inserted!.job.id;
    ctx.sql('UPDATE jobs SET parent_id = ?, parent_step = ? WHERE id = ?').run(id, step, childId);
    saveStep(ctx, id, { name: step, seq, state: 'completed', attempt, tries: 1, startedAt: now, finishedAt: now, result: String(childId), error: null });
    return { childId, inserted: { ...inserted!.job, parentId: id } };
  });
}

export async function jobChildren(ctx: SqliteContext, { id }: StoreParams<'jobChildren'>): Promise<ChildRecord[]> {
  return ctx.sql(`SELECT id, task, state, result,
      CASE state WHEN 'failed' THEN json_extract(errors, '$[#-1].message') WHEN 'cancelled' THEN cancel_reason END AS error
    FROM jobs WHERE parent_id = ? ORDER BY id`).all(id) as ChildRecord[];
}

/** SQLite: the change watch sees every commit; nothing to register. */
export async function finishedListen(_ctx: SqliteContext, _params: StoreParams<'finishedListen'>): Promise<void> {}

/** SQLite: nothing was registered. */
export async function finishedUnlisten(_ctx: SqliteContext, _params: StoreParams<'finishedUnlisten'>): Promise<void> {}
