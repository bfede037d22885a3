import type { StepRecord, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { holds, rowToStep, saveStep, type StepRow } from './step-rows.js';
import { withEvent } from './timeline.js';

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

export async function jobStepsOrphaned(ctx: SqliteContext, { id, token, steps, now }: StoreParams<'jobStepsOrphaned'>): Promise<boolean> {
  return ctx.sql(`UPDATE jobs SET timeline = ${ORPHANED} WHERE id = @id AND lease_token = @token AND state = 'running'`)
    .run({ id, token, now, steps: JSON.stringify(steps) }).changes === 1;
}

/** The `stepsOrphaned` event at `@now` naming `@steps` (a JSON array), with the running attempt. */
const ORPHANED = withEvent(`'type', 'stepsOrphaned', 'at', @now, 'steps', json(@steps)`);
