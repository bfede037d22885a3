import type { StepRecord, StoreParams } from '../store.js';
import type { PgContext } from './context.js';
import { rowToStep, saveStep, STEP_COLUMNS, type StepRow } from './step-rows.js';

export async function jobStepList(ctx: PgContext, { id }: StoreParams<'jobStepList'>): Promise<StepRecord[]> {
  const rows = await ctx.query<StepRow>('step_list', `SELECT ${STEP_COLUMNS} FROM :schema.job_steps WHERE job_id = $1 ORDER BY seq, name`, [id]);
  return rows.map(rowToStep);
}

export async function jobStepSave(ctx: PgContext, { id, token, step }: StoreParams<'jobStepSave'>): Promise<boolean> {
  return saveStep(ctx, null, id, token, step);
}
