import type { PausedQueue, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';

/** Paused queues on SQLite (table `queues`, migration 0004). */

export async function queueSetPaused(ctx: SqliteContext, { name, paused, now }: StoreParams<'queueSetPaused'>): Promise<boolean> {
  const statement = paused
    ? ctx.sql(`INSERT INTO queues (name, paused_at, updated_at) VALUES (@name, @now, @now)
        ON CONFLICT (name) DO UPDATE SET paused_at = @now, updated_at = @now WHERE queues.paused_at IS NULL`)
    : ctx.sql('UPDATE queues SET paused_at = NULL, updated_at = @now WHERE name = @name AND paused_at IS NOT NULL');
  return statement.run({ name, now }).changes === 1;
}

export async function queueListPaused(ctx: SqliteContext): Promise<PausedQueue[]> {
  return ctx.sql('SELECT name AS queue, paused_at AS pausedAt FROM queues WHERE paused_at IS NOT NULL ORDER BY name').all() as PausedQueue[];
}

export async function queueKnown(ctx: SqliteContext, { name, now }: StoreParams<'queueKnown'>): Promise<boolean> {
  return (
    ctx.sql(`SELECT EXISTS (SELECT 1 FROM queues WHERE name = @name)
      OR EXISTS (SELECT 1 FROM jobs WHERE state IN ('queued','running') AND queue = @name)
      OR EXISTS (SELECT 1 FROM jobs_finished WHERE queue = @name)
      OR EXISTS (SELECT 1 FROM workers, json_each(workers.queues) AS q WHERE workers.expires_at > @now AND q.value = @name) AS known`)
      .get({ name, now }) as { known: number }
  ).known === 1;
}
