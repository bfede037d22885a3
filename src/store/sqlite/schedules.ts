import type { Job } from '../../job/types.js';
import type { ScheduleRecord, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { applyKeyStrategies } from './key-strategies.js';
import { rowToJob, rowToSchedule, type JobRow, type ScheduleRow } from './rows.js';

/** Schedules on SQLite: the idempotent upsert, due ticks, and the compare-and-set advance that enqueues them. */

export async function scheduleUpsert(ctx: SqliteContext, { schedule, nextRunAt, now }: StoreParams<'scheduleUpsert'>): Promise<{ schedule: ScheduleRecord; created: boolean }> {
  return ctx.transaction(() => {
    const existed = ctx.sql('SELECT 1 FROM schedules WHERE name = ?').get(schedule.name) !== undefined;
    const row = ctx.sql(`INSERT INTO schedules (name, cron, every_ms, timezone, task, payload, queue, priority, max_attempts, timeout_ms,
        catch_up, catch_up_limit, overlap, next_run_at, created_at, updated_at)
      VALUES (@name, @cron, @everyMs, @timezone, @task, @payload, @queue, @priority, @maxAttempts, @timeoutMs,
        @catchUp, @catchUpLimit, @overlap, @nextRunAt, @now, @now)
      ON CONFLICT (name) DO UPDATE SET
        next_run_at = CASE WHEN schedules.cron IS excluded.cron AND schedules.every_ms IS excluded.every_ms
          AND schedules.timezone = excluded.timezone THEN schedules.next_run_at ELSE excluded.next_run_at END,
        cron = excluded.cron, every_ms = excluded.every_ms, timezone = excluded.timezone, task = excluded.task,
        payload = excluded.payload, queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
        timeout_ms = excluded.timeout_ms, catch_up = excluded.catch_up, catch_up_limit = excluded.catch_up_limit,
        overlap = excluded.overlap, updated_at = excluded.updated_at
      RETURNING *`).get({ ...schedule, nextRunAt, now }) as ScheduleRow;
    return { schedule: rowToSchedule(row), created: !existed };
  });
}

export async function scheduleGet(ctx: SqliteContext, { name }: StoreParams<'scheduleGet'>): Promise<ScheduleRecord | null> {
  const row = ctx.sql('SELECT * FROM schedules WHERE name = ?').get(name) as ScheduleRow | undefined;
  return row ? rowToSchedule(row) : null;
}

export async function scheduleList(ctx: SqliteContext): Promise<ScheduleRecord[]> {
  return (ctx.sql('SELECT * FROM schedules ORDER BY name').all() as ScheduleRow[]).map(rowToSchedule);
}

export async function scheduleDue(ctx: SqliteContext, { now, limit }: StoreParams<'scheduleDue'>): Promise<{ due: ScheduleRecord[]; earliest: number | null }> {
  const due = ctx.sql('SELECT * FROM schedules WHERE paused = 0 AND next_run_at <= ? ORDER BY next_run_at, name LIMIT ?').all(now, limit) as ScheduleRow[];
  const earliest = (ctx.sql('SELECT min(next_run_at) AS t FROM schedules WHERE paused = 0').get() as { t: number | null }).t;
  return { due: due.map(rowToSchedule), earliest };
}

export async function scheduleAdvance(ctx: SqliteContext, p: StoreParams<'scheduleAdvance'>): Promise<{ advanced: boolean; jobs: Job[] }> {
  const insert = ctx.sql(`INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at, schedule_name, scheduled_for,
      concurrency_key, concurrency_limit, trace_context)
    VALUES (@queue, @task, @payload, 'queued', @priority, @runAt, @maxAttempts, @timeoutMs, @key, @now, @scheduleName, @scheduledFor,
      @concurrencyKey, @concurrencyLimit, @traceContext)
    ON CONFLICT DO NOTHING RETURNING *`);
  const lastTick = p.jobs.length > 0 ? Math.max(...p.jobs.map((j) => j.scheduledFor)) : null;
  return ctx.transaction(() => {
    // The compare-and-set: the write lock serializes racing instances; a loser's
    // WHERE no longer matches once the winner moved next_run_at.
    const moved = ctx.sql(`UPDATE schedules SET next_run_at = @nextRunAt, last_run_at = coalesce(@lastTick, last_run_at),
        last_worker = CASE WHEN @lastTick IS NULL THEN last_worker ELSE @workerId END, updated_at = @now
      WHERE name = @name AND next_run_at = @expected AND paused = 0`).run({
      nextRunAt: p.nextRunAt,
      lastTick,
      workerId: p.workerId,
      now: p.now,
      name: p.name,
      expected: p.expectedNextRunAt,
    }).changes;
    if (moved !== 1) return { advanced: false, jobs: [] };
    const inserted: Array<{ id: number; job: (typeof p.jobs)[number]; row: JobRow }> = [];
    for (const job of p.jobs) {
      const row = insert.get({ concurrencyKey: null, concurrencyLimit: null, traceContext: null, ...job, now: p.now, scheduleName: p.name }) as JobRow | undefined;
      if (row) inserted.push({ id: row.id, job, row });
    }
    // The overlap policy, as concurrency strategies of the schedule's key (oldest tick first);
    // the jobs are read again only when a strategy changed one.
    if (!applyKeyStrategies(ctx, inserted, p.now)) return { advanced: true, jobs: inserted.map(({ row }) => rowToJob(row)) };
    const read = ctx.sql('SELECT * FROM jobs_all WHERE id = ?');
    return { advanced: true, jobs: inserted.map(({ id }) => rowToJob(read.get(id) as JobRow)) };
  });
}

export async function scheduleTrigger(ctx: SqliteContext, { name, now }: StoreParams<'scheduleTrigger'>): Promise<Job | null> {
  const row = ctx.sql(`INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, created_at, schedule_name)
    SELECT queue, task, payload, 'queued', priority, @now, max_attempts, timeout_ms, @now, name FROM schedules WHERE name = @name
    RETURNING *`).get({ name, now }) as JobRow | undefined;
  return row ? rowToJob(row) : null;
}

export async function scheduleSetPaused(ctx: SqliteContext, { name, paused, nextRunAt, now }: StoreParams<'scheduleSetPaused'>): Promise<boolean> {
  const sql = paused
    ? 'UPDATE schedules SET paused = 1, updated_at = @now WHERE name = @name'
    : 'UPDATE schedules SET paused = 0, next_run_at = @nextRunAt, updated_at = @now WHERE name = @name';
  return ctx.sql(sql).run(paused ? { name, now } : { name, now, nextRunAt }).changes === 1;
}

export async function scheduleRemove(ctx: SqliteContext, { name }: StoreParams<'scheduleRemove'>): Promise<boolean> {
  return ctx.sql('DELETE FROM schedules WHERE name = ?').run(name).changes === 1;
}
