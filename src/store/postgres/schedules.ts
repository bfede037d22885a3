import type { Job } from '../../job/types.js';
import type { ScheduleRecord, StoreParams } from '../store.js';
import { date, dateOrNull, type PgContext } from './context.js';
import { applyKeyStrategies } from './key-strategies.js';
import { rowToJob, rowToSchedule, type JobRow, type ScheduleRow } from './rows.js';

/** Schedules on PostgreSQL: the idempotent upsert, due ticks, and the compare-and-set advance that enqueues them. */

export async function scheduleUpsert(ctx: PgContext, { schedule: d, nextRunAt, now }: StoreParams<'scheduleUpsert'>): Promise<{ schedule: ScheduleRecord; created: boolean }> {
  const row = (await ctx.query<ScheduleRow & { inserted: boolean }>('schedule_upsert', `
    INSERT INTO :schema.schedules AS s (name, cron, every_ms, timezone, task, payload, queue, priority, max_attempts, timeout_ms,
      catch_up, catch_up_limit, next_run_at, created_at, updated_at, overlap)
    VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15)
    ON CONFLICT (name) DO UPDATE SET
      next_run_at = CASE WHEN s.cron IS NOT DISTINCT FROM excluded.cron AND s.every_ms IS NOT DISTINCT FROM excluded.every_ms
        AND s.timezone = excluded.timezone THEN s.next_run_at ELSE excluded.next_run_at END,
      cron = excluded.cron, every_ms = excluded.every_ms, timezone = excluded.timezone, task = excluded.task,
      payload = excluded.payload, queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
      timeout_ms = excluded.timeout_ms, catch_up = excluded.catch_up, catch_up_limit = excluded.catch_up_limit,
      overlap = excluded.overlap, updated_at = excluded.updated_at
    RETURNING *, (xmax = 0) AS inserted`, [
    d.name, d.cron, d.everyMs, d.timezone, d.task, d.payload, d.queue, d.priority, d.maxAttempts, d.timeoutMs,
    d.catchUp, d.catchUpLimit, dateOrNull(nextRunAt), date(now), d.overlap,
  ]))[0]!;
  return { schedule: rowToSchedule(row), created: row.inserted };
}

export async function scheduleGet(ctx: PgContext, { name }: StoreParams<'scheduleGet'>): Promise<ScheduleRecord | null> {
  const row = (await ctx.query<ScheduleRow>('schedule_get', 'SELECT * FROM :schema.schedules WHERE name = $1', [name]))[0];
  return row ? rowToSchedule(row) : null;
}

export async function scheduleList(ctx: PgContext): Promise<ScheduleRecord[]> {
  return (await ctx.query<ScheduleRow>('schedule_list', 'SELECT * FROM :schema.schedules ORDER BY name')).map(rowToSchedule);
}

export async function scheduleDue(ctx: PgContext, { now, limit }: StoreParams<'scheduleDue'>): Promise<{ due: ScheduleRecord[]; earliest: number | null }> {
  const due = await ctx.query<ScheduleRow>('schedule_due', `SELECT * FROM :schema.schedules
    WHERE NOT paused AND next_run_at <= $1 ORDER BY next_run_at, name LIMIT $2`, [date(now), limit]);
  const earliest = (await ctx.query<{ t: Date | null }>('schedule_earliest', 'SELECT min(next_run_at) AS t FROM :schema.schedules WHERE NOT paused'))[0]?.t ?? null;
  return { due: due.map(rowToSchedule), earliest: earliest?.getTime() ?? null };
}

export async function scheduleAdvance(ctx: PgContext, p: StoreParams<'scheduleAdvance'>): Promise<{ advanced: boolean; jobs: Job[] }> {
  const lastTick = p.jobs.length > 0 ? Math.max(...p.jobs.map((j) => j.scheduledFor)) : null;
  return ctx.transaction(async (client) => {
    // The compare-and-set: the row lock serializes racing instances; the losers'
    // WHERE no longer matches once the winner committed the new next_run_at.
    const moved = await client.query(ctx.sql(`UPDATE :schema.schedules SET next_run_at = $3, last_run_at = coalesce($4, last_run_at),
        last_worker = CASE WHEN $4::timestamptz IS NULL THEN last_worker ELSE $5 END, updated_at = $6
      WHERE name = $1 AND next_run_at = $2 AND NOT paused`), [p.name, date(p.expectedNextRunAt), dateOrNull(p.nextRunAt), dateOrNull(lastTick), p.workerId, date(p.now)]);
    if (moved.rowCount !== 1) return { advanced: false, jobs: [] };
    if (p.jobs.length === 0) return { advanced: true, jobs: [] };
    const rows = (await client.query<JobRow>(ctx.sql(`
      INSERT INTO :schema.jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at, schedule_name, scheduled_for,
        concurrency_key, concurrency_limit, trace_context)
      SELECT queue, task, payload::json, 'queued', priority, run_at, max_attempts, timeout_ms, key, $9, $10, scheduled_for, concurrency_key, concurrency_limit, trace_context::json
      FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[], $7::int[], $8::timestamptz[], $11::text[], $12::text[], $13::int[], $14::text[])
        AS t(queue, task, payload, priority, run_at, max_attempts, timeout_ms, scheduled_for, key, concurrency_key, concurrency_limit, trace_context)
      ORDER BY scheduled_for
      ON CONFLICT DO NOTHING
      RETURNING *`), [
      p.jobs.map((j) => j.queue),
      p.jobs.map((j) => j.task),
      p.jobs.map((j) => j.payload),
      p.jobs.map((j) => j.priority),
      p.jobs.map((j) => date(j.runAt)),
      p.jobs.map((j) => j.maxAttempts),
      p.jobs.map((j) => j.timeoutMs),
      p.jobs.map((j) => date(j.scheduledFor)),
      date(p.now),
      p.name,
      p.jobs.map((j) => j.key),
      p.jobs.map((j) => j.concurrencyKey ?? null),
      p.jobs.map((j) => j.concurrencyLimit ?? null),
      p.jobs.map((j) => j.traceContext ?? null),
    ])).rows;
    const jobs = rows.map(rowToJob).sort((a, b) => a.id - b.id);
    // The overlap policy, as concurrency strategies of the schedule's key (oldest tick first).
    const byTick = new Map(p.jobs.map((j) => [j.scheduledFor, j]));
    if (!(await applyKeyStrategies(ctx, client, jobs.map((job) => ({ id: job.id, job: byTick.get(job.scheduledFor!.getTime())! })), p.now))) return { advanced: true, jobs };
    const reread = await client.query<JobRow>(ctx.sql('SELECT * FROM :schema.jobs_all WHERE id = ANY($1::bigint[]) ORDER BY id'), [jobs.map((j) => j.id)]);
    return { advanced: true, jobs: reread.rows.map(rowToJob) };
  });
}

export async function scheduleTrigger(ctx: PgContext, { name, now }: StoreParams<'scheduleTrigger'>): Promise<Job | null> {
  const row = (await ctx.query<JobRow>('schedule_trigger', `
    INSERT INTO :schema.jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, created_at, schedule_name)
    SELECT queue, task, payload, 'queued', priority, $2, max_attempts, timeout_ms, $2, name FROM :schema.schedules WHERE name = $1
    RETURNING *`, [name, date(now)]))[0];
  return row ? rowToJob(row) : null;
}

export async function scheduleSetPaused(ctx: PgContext, { name, paused, nextRunAt, now }: StoreParams<'scheduleSetPaused'>): Promise<boolean> {
  const rows = paused
    ? await ctx.query('schedule_pause', 'UPDATE :schema.schedules SET paused = true, updated_at = $2 WHERE name = $1 RETURNING 1', [name, date(now)])
    : await ctx.query('schedule_resume', 'UPDATE :schema.schedules SET paused = false, next_run_at = $3, updated_at = $2 WHERE name = $1 RETURNING 1', [
        name,
        date(now),
        dateOrNull(nextRunAt),
      ]);
  return rows.length === 1;
}

export async function scheduleRemove(ctx: PgContext, { name }: StoreParams<'scheduleRemove'>): Promise<boolean> {
  return (await ctx.query('schedule_remove', 'DELETE FROM :schema.schedules WHERE name = $1 RETURNING 1', [name])).length === 1;
}
