import type { Job } from '../../job/types.js';
import type { ChildRecord, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';
import { jobInsertMany } from './jobs.js';
import { saveStep } from './step-rows.js';

export async function jobEnqueueChild(ctx: PgContext, { id, token, step, seq, attempt, child, now }: StoreParams<'jobEnqueueChild'>): Promise<{ childId: number; inserted: Job | null } | false> {
  return ctx.transaction(async (client) => {
    const held = await client.query(ctx.sql("SELECT 1 FROM :schema.jobs WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR SHARE"), [id, token]);
    if (held.rows.length === 0) return false;
    const stored = (await client.query<{ result: string }>(ctx.sql("SELECT result::text AS result FROM :schema.job_steps WHERE job_id = $1 AND name = $2 AND state = 'completed'"), [id, step])).rows[0];
    if (stored) return { childId: Number(stored.result), inserted: null };
    const [inserted] = await jobInsertMany(ctx, { jobs: [{ ...child, key: null }], now, client });
    const childId = inserted!.job.id;
    await client.query(ctx.sql('UPDATE :schema.jobs SET parent_id = $1, parent_step = $2 WHERE id = $3'), [id, step, childId]);
    await saveStep(ctx, client, id, token, { name: step, seq, state: 'completed', attempt, tries: 1, startedAt: now, finishedAt: now, result: String(childId), error: null });
    return { childId, inserted: { ...inserted!.job, parentId: id } };
  });
}

export async function jobChildren(ctx: PgContext, { id }: StoreParams<'jobChildren'>): Promise<ChildRecord[]> {
  const rows = await ctx.query<Omit<ChildRecord, 'id'> & { id: string }>('job_children', `SELECT id, task, state, result::text AS result,
      CASE state WHEN 'failed' THEN errors -> -1 ->> 'message' WHEN 'cancelled' THEN cancel_reason END AS error
    FROM :schema.jobs_all WHERE parent_id = $1 ORDER BY id`, [id]);
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

export async function finishedListen(ctx: PgContext, { owner, ttlMs, now }: StoreParams<'finishedListen'>): Promise<void> {
  await ctx.query('finished_listen', `INSERT INTO :schema.finished_listeners (owner, expires_at) VALUES ($1, $2)
    ON CONFLICT (owner) DO UPDATE SET expires_at = excluded.expires_at`, [owner, date(now + ttlMs)]);
}

export async function finishedUnlisten(ctx: PgContext, { owner }: StoreParams<'finishedUnlisten'>): Promise<void> {
  await ctx.query('finished_unlisten', 'DELETE FROM :schema.finished_listeners WHERE owner = $1', [owner]);
}
