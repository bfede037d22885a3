import type { ScheduleRecord, ServiceRecord } from '../store.js';

/** A `services` row (joined with its lease) as SQLite returns it. */
export interface ServiceRow {
  name: string;
  paused: number;
  last_run_at: number | null;
  next_run_at: number | null;
  last_error: string | null;
  last_error_at: number | null;
  failures: number;
  updated_at: number;
  holder: string | null;
  holder_until: number | null;
}

/** A `schedules` row as SQLite returns it. */
export interface ScheduleRow {
  name: string;
  cron: string | null;
  every_ms: number | null;
  timezone: string;
  task: string;
  payload: string;
  queue: string;
  priority: number;
  max_attempts: number;
  timeout_ms: number | null;
  catch_up: ScheduleRecord['catchUp'];
  catch_up_limit: number;
  paused: number;
  next_run_at: number | null;
  last_run_at: number | null;
  last_worker: string | null;
  created_at: number;
  updated_at: number;
}

export function rowToService(row: ServiceRow): ServiceRecord {
  return {
    name: row.name,
    paused: row.paused === 1,
    lastRunAt: row.last_run_at,
    nextRunAt: row.next_run_at,
    lastError: row.last_error,
    lastErrorAt: row.last_error_at,
    failures: row.failures,
    updatedAt: row.updated_at,
    holder: row.holder ?? null,
    holderUntil: row.holder_until ?? null,
  };
}

export function rowToSchedule(row: ScheduleRow): ScheduleRecord {
  return {
    name: row.name,
    cron: row.cron,
    everyMs: row.every_ms,
    timezone: row.timezone,
    task: row.task,
    payload: row.payload,
    queue: row.queue,
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    catchUp: row.catch_up,
    catchUpLimit: row.catch_up_limit,
    paused: row.paused === 1,
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at,
    lastWorker: row.last_worker,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
