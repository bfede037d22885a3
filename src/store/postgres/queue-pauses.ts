import type { PausedQueue, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';

/** Paused queues on PostgreSQL (table `queues`, migration 0004: resuming NOTIFYs `<schema>_jobs`). */

export async function queueSetPaused(ctx: PgContext, { name, paused, now }: StoreParams<'queueSetPaused'>): Promise<boolean> {
  const text = paused
    ? `INSERT INTO :schema.queues (name, paused_at, updated_at) VALUES ($1, $2, $2)
        ON CONFLICT (name) DO UPDATE SET paused_at = $2, updated_at = $2 WHERE queues.paused_at IS NULL RETURNING name`
    : 'UPDATE :schema.queues SET paused_at = NULL, updated_at = $2 WHERE name = $1 AND paused_at IS NOT NULL RETURNING name';
  return (await ctx.query(null, text, [name, date(now)])).length === 1;
}

export async function queueListPaused(ctx: PgContext): Promise<PausedQueue[]> {
  const rows = await ctx.query<{ queue: string; paused_at: Date }>(null, 'SELECT name AS queue, paused_at FROM :schema.queues WHERE paused_at IS NOT NULL ORDER BY name');
  return rows.map((r) => ({ queue: r.queue, pausedAt: r.paused_at.getTime() }));
}

export async function queueKnown(ctx: PgContext, { name, now }: StoreParams<'queueKnown'>): Promise<boolean> {
  const rows = await ctx.query<{ known: boolean }>(null, `
    SELECT EXISTS (SELECT 1 FROM :schema.queues WHERE name = $1)
      OR EXISTS (SELECT 1 FROM :schema.jobs WHERE state = 'queued' AND queue = $1)
      OR EXISTS (SELECT 1 FROM :schema.jobs WHERE state = 'running' AND queue = $1)
      OR EXISTS (SELECT 1 FROM :schema.jobs_finished WHERE queue = $1)
      OR EXISTS (SELECT 1 FROM :schema.workers WHERE expires_at > $2 AND $1 = ANY(queues)) AS known`, [name, date(now)]);
  return rows[0]!.known;
}
