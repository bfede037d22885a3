import type { StepRecord, StoreParams } from '../store.js';
import type { PgContext } from './context.js';
import { rowToStep, saveStep, STEP_COLUMNS, type StepRow } from './step-rows.js';
import { date } from './context.js';
import { ms, withEvent } from './timeline.js';

export async function jobStepList(ctx: PgContext, { id }: StoreParams<'jobStepList'>): Promise<StepRecord[]> {
  const rows = await ctx.query<StepRow>('step_list', `SELECT ${STEP_COLUMNS} FROM :schema.job_steps WHERE job_id = $1 ORDER BY seq, name`, [id]);
  return rows.map(rowToStep);
}

export async function jobStepSave(ctx: PgContext, { id, token, step }: StoreParams<'jobStepSave'>): Promise<boolean> {
  return saveStep(ctx, null, id, token, step);
}

/** The `stepsOrphaned` event (`$3` now, `$4` the steps as a JSON array), with the running attempt. */
const ORPHANED = withEvent(`'type', 'stepsOrphaned', 'at', ${ms('$3::timestamptz')}, 'steps', $4::jsonb`);

export async function jobStepsOrphaned(ctx: PgContext, { id, token, steps, now }: StoreParams<'jobStepsOrphaned'>): Promise<boolean> {
  const rows = await ctx.query(null, `UPDATE :schema.jobs SET timeline = ${ORPHANED} WHERE id = $1 AND lease_token = $2 AND state = 'running' RETURNING id`,
    [id, token, date(now), JSON.stringify(steps)]);
  return rows.length === 1;
}
