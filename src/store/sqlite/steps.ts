import type { StepRecord, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { holds, rowToStep, saveStep, type StepRow } from './step-rows.js';

export async function jobStepList(ctx: SqliteContext, { id }: StoreParams<'jobStepList'>): Promise<StepRecord[]> {
  return (ctx.sql('SELECT * FROM job_steps WHERE job_id = ? ORDER BY seq, name').all(id) as StepRow[]).map(rowToStep);
}

export async function jobStepSave(ctx: SqliteContext, { id, token, step }: StoreParams<'jobStepSave'>): Promise<boolean> {
  return ctx.transaction(() => {
    if (!holds(ctx, id, token)) return false;
    saveStep(ctx, id, step);
    return true;
  });
}
