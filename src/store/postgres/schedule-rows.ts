import type { ScheduleRecord, ServiceRecord } from '../store.js';

/** A `services` row (joined with its lease) as node-postgres returns it. */
export interface PgServiceRow {
  name: string;
  paused: boolean;
  last_run_at: Date | null;
  next_run_at: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
  failures: number;
  updated_at: Date;
  holder: string | null;
  holder_until: Date | null;
}

/** A `schedules` row as node-postgres returns it (bigint as string, json parsed). */
export interface PgScheduleRow {
  name: string;
  cron: string | null;
  every_ms: string | null;
  timezone: string;
  task: string;
  payload: unknown;
  queue: string;
  priority: number;
  max_attempts: number;
  timeout_ms: number | null;
  catch_up: ScheduleRecord['catchUp'];
  catch_up_limit: number;
  paused: boolean;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_worker: string | null;
  created_at: Date;
  updated_at: Date;
}

const ms = (d: Date | null): number | null => (d === null ? null : d.getTime());

export function pgRowToService(row: PgServiceRow): ServiceRecord {
  return {
    name: row.name,
    paused: row.paused,
    lastRunAt: ms(row.last_run_at),
    nextRunAt: ms(row.next_run_at),
    lastError: row.last_error,
    lastErrorAt: ms(row.last_error_at),
    failures: row.failures,
    updatedAt: row.updated_at.getTime(),
    holder: row.holder ?? null,
    holderUntil: ms(row.holder_until ?? null),
  };
}

export function pgRowToSchedule(row: PgScheduleRow): ScheduleRecord {
  return {
    name: row.name,
    cron: row.cron,
    everyMs: row.every_ms === null ? null : Number(row.every_ms),
    timezone: row.timezone,
    task: row.task,
    payload: JSON.stringify(row.payload),
    queue: row.queue,
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    catchUp: row.catch_up,
    catchUpLimit: row.catch_up_limit,
    paused: row.paused,
    nextRunAt: ms(row.next_run_at),
    lastRunAt: ms(row.last_run_at),
    lastWorker: row.last_worker,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
  };
}
