import type { ClaimedJob, Job, JobError, JobState } from '../../job/types.js';

/** A `jobs` row as SQLite returns it. */
export interface JobRow {
  id: number;
  queue: string;
  task: string;
  payload: string;
  state: JobState;
  priority: number;
  run_at: number;
  attempt: number;
  max_attempts: number;
  timeout_ms: number | null;
  key: string | null;
  progress: string | null;
  checkpoint: string | null;
  result: string | null;
  errors: string;
  cancel_requested_at: number | null;
  cancel_reason: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  lease_token: number;
  schedule_name: string | null;
  scheduled_for: number | null;
}

const date = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

/** Maps a row to the public Job shape (JSON parsed, times as Dates). */
export function rowToJob(row: JobRow): Job {
  const errors = JSON.parse(row.errors) as Array<Omit<JobError, 'time'> & { time: number }>;
  return {
    id: row.id,
    queue: row.queue,
    task: row.task,
    payload: JSON.parse(row.payload),
    state: row.state,
    priority: row.priority,
    runAt: new Date(row.run_at),
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    key: row.key,
    progress: row.progress === null ? null : JSON.parse(row.progress),
    checkpoint: row.checkpoint === null ? null : JSON.parse(row.checkpoint),
    result: row.result === null ? null : JSON.parse(row.result),
    errors: errors.map((e) => ({ ...e, time: new Date(e.time) })),
    cancelRequestedAt: date(row.cancel_requested_at),
    cancelReason: row.cancel_reason,
    createdAt: new Date(row.created_at),
    startedAt: date(row.started_at),
    finishedAt: date(row.finished_at),
    leaseOwner: row.lease_owner,
    leaseExpiresAt: date(row.lease_expires_at),
    scheduleName: row.schedule_name ?? null,
    scheduledFor: date(row.scheduled_for ?? null),
  };
}

export function rowToClaimedJob(row: JobRow): ClaimedJob {
  return { ...rowToJob(row), leaseToken: row.lease_token };
}
