import type { ClaimedJob, Job, JobError, JobState } from '../../job/types.js';

/** A `jobs` row as node-postgres returns it (bigint as string, timestamptz as Date, json parsed). */
export interface PgJobRow {
  id: string;
  queue: string;
  task: string;
  payload: unknown;
  state: JobState;
  priority: number;
  run_at: Date;
  attempt: number;
  max_attempts: number;
  timeout_ms: number | null;
  key: string | null;
  progress: Job['progress'];
  checkpoint: Job['checkpoint'];
  result: unknown;
  errors: Array<Omit<JobError, 'time'> & { time: number }>;
  cancel_requested_at: Date | null;
  cancel_reason: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  lease_token: number;
  schedule_name: string | null;
  scheduled_for: Date | null;
}

/** Maps a row to the public Job shape. */
export function pgRowToJob(row: PgJobRow): Job {
  return {
    id: Number(row.id),
    queue: row.queue,
    task: row.task,
    payload: row.payload as Job['payload'],
    state: row.state,
    priority: row.priority,
    runAt: row.run_at,
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    key: row.key,
    progress: row.progress,
    checkpoint: row.checkpoint,
    result: (row.result ?? null) as Job['result'],
    errors: row.errors.map((e) => ({ ...e, time: new Date(e.time) })),
    cancelRequestedAt: row.cancel_requested_at,
    cancelReason: row.cancel_reason,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    scheduleName: row.schedule_name ?? null,
    scheduledFor: row.scheduled_for ?? null,
  };
}

export function pgRowToClaimedJob(row: PgJobRow): ClaimedJob {
  return { ...pgRowToJob(row), leaseToken: row.lease_token };
}
