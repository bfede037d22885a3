import type { Job } from '../../job/types.js';
import type { ChildRecord, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';
import { jobInsertMany } from './jobs.js';
import { saveStep } from './step-rows.js';

export async function jobEnqueueChildren(ctx: PgContext, { id, token, attempt, children, now }: StoreParams<'jobEnqueueChildren'>): Promise<Array<{ childId: number; inserted: Job | null }> | false> {
  return ctx.transaction(async (client) => {
    const held = await client.query(ctx.sql("SELECT 1 FROM :schema.jobs WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR SHARE"), [id, token]);
    if (held.rows.length === 0) return false;
    const stored = new Map((await client.query<{ name: string; result: string }>(ctx.sql(`SELECT name, result::text AS result FROM :schema.job_steps
      WHERE job_id = $1 AND name = ANY($2::text[]) AND state = 'completed'`), [id, children.map((c) => c.step)])).rows.map((r) => [r.name, Number(r.result)]));
    const fresh = children.filter((c) => !stored.has(c.step));
    const inserted = fresh.length === 0 ? [] : await jobInsertMany(ctx, { jobs: fresh.map((c) => ({ ...c.child, key: null })), now, client });
    const ids = inserted.map((r) => r.job.id);
    if (ids.length > 0) {
      await client.query(ctx.sql(`UPDATE :schema.jobs j SET parent_id = $1, parent_step = c.step
        FROM unnest($2::bigint[], $3::text[]) AS c(id, step) WHERE j.id = c.id`), [id, ids, fresh.map((c) => c.step)]);
    }
    const byStep = new Map<string, { childId: number; inserted: Job | null }>();
    for (const [n, c] of fresh.entries()) {
      await saveStep(ctx, client, id, token, { name: c.step, seq: c.seq, state: 'completed', attempt, tries: 1, startedAt: now, finishedAt: now, result: String(ids[n]), error: null });
      byStep.set(c.step, { childId: ids[n]!, inserted: { ...inserted[n]!.job, parentId: id } });
    }
    return children.map((c) => (stored.has(c.step) ? { childId: stored.get(c.step)!, inserted: null } : byStep.get(c.step)!));
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
