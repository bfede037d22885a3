import type { ClaimedJob, Job, JobError, JobState, JobSummary, JobWait, Preview } from '../job/types.js';
import type { JobTimelineRecord, NewJob, ScheduleRecord, ServiceRecord, StoredJobEvent, WorkerRecord } from './store.js';

/**
 * The rows of Baton's tables as a driver returns them, generic over the column
 * types that differ between drivers, and the one mapping of each to its public
 * shape. A driver's `rows.ts` fixes the types and gets its mappers (`rowToJob`,
 * …) from {@link rowMappers} with its {@link ColumnReader}, so the two drivers
 * cannot map a column differently.
 *
 * Type parameters: `Id` a bigint column (SQLite number, node-postgres string),
 * `Time` a time column (SQLite ms number, node-postgres Date), `Json` a json
 * column (SQLite text, node-postgres parsed value), `Bool` a boolean (SQLite 0/1),
 * `List` an array column (SQLite JSON text, node-postgres array).
 */
export interface ColumnReader<Id, Time, Json, Bool, List> {
  id(value: Id): number;
  /** ms since the epoch */
  time(value: Time): number;
  /** The parsed JSON value (SQL NULL → null). */
  json(value: Json | null): unknown;
  /** The value as JSON text. */
  jsonText(value: Json): string;
  bool(value: Bool): boolean;
  list(value: List): unknown[];
}

/** A `jobs` row. */
export interface JobRowOf<Id, Time, Json> {
  id: Id;
  queue: string;
  task: string;
  payload: Json;
  state: JobState;
  priority: number;
  run_at: Time;
  attempt: number;
  max_attempts: number;
  timeout_ms: number | null;
  key: string | null;
  progress: Json | null;
  checkpoint: Json | null;
  result: Json | null;
  errors: Json;
  cancel_requested_at: Time | null;
  cancel_reason: string | null;
  created_at: Time;
  started_at: Time | null;
  finished_at: Time | null;
  lease_owner: string | null;
  lease_expires_at: Time | null;
  lease_token: number;
  schedule_name: string | null;
  scheduled_for: Time | null;
  concurrency_key: string | null;
  concurrency_limit: number | null;
  trace_context: Json | null;
  /** The stored timeline (migration 18): a JSON array of StoredJobEvent. */
  timeline: Json;
  last_worker: string | null;
  /** What a queued job waits for (migration 22): JSON `{ kind, until (ms), topic? }`, or null. */
  wait: Json | null;
  /** The job whose run enqueued it (migration 24), or null. */
  parent_id: Id | null;
}

/** The columns of {@link JOB_SUMMARY_COLUMNS}: what a `jobs` row and a `jobList` row both hold. */
type JobFieldsRowOf<Id, Time, Json> = Omit<JobRowOf<Id, Time, Json>, 'payload' | 'checkpoint' | 'result' | 'errors' | 'timeline' | 'last_worker' | 'lease_token'>;

/**
 * A `jobs` row as `jobList` reads it: the columns of {@link JOB_SUMMARY_COLUMNS}, and in
 * place of the large ones, the first PREVIEW_CHARS characters of each (`*_head`) and
 * its whole size in bytes (`*_bytes`); the last error's fields; never the timeline.
 */
export type JobSummaryRowOf<Id, Time, Json> = JobFieldsRowOf<Id, Time, Json> & {
  payload_head: string;
  payload_bytes: number;
  result_head: string | null;
  result_bytes: number | null;
  checkpoint_head: string | null;
  checkpoint_bytes: number | null;
  error_count: number;
  last_error_attempt: number | null;
  /** ms since the epoch */
  last_error_time: number | null;
  last_error_head: string | null;
  last_error_bytes: number | null;
};

/** The plain columns `jobList` reads (both drivers); the previews are each driver's expressions. */
export const JOB_SUMMARY_COLUMNS = `id, queue, task, state, priority, run_at, attempt, max_attempts, timeout_ms, key, progress,
  cancel_requested_at, cancel_reason, created_at, started_at, finished_at, lease_owner, lease_expires_at,
  schedule_name, scheduled_for, concurrency_key, concurrency_limit, trace_context, wait, parent_id`;

/** A `schedules` row. */
export interface ScheduleRowOf<Id, Time, Json, Bool> {
  name: string;
  cron: string | null;
  every_ms: Id | null;
  timezone: string;
  task: string;
  payload: Json;
  queue: string;
  priority: number;
  max_attempts: number;
  timeout_ms: number | null;
  catch_up: ScheduleRecord['catchUp'];
  catch_up_limit: number;
  overlap: ScheduleRecord['overlap'];
  paused: Bool;
  next_run_at: Time | null;
  last_run_at: Time | null;
  last_worker: string | null;
  created_at: Time;
  updated_at: Time;
}

/** A `services` row joined with its lease (`holder`, `holder_until`). */
export interface ServiceRowOf<Time, Bool> {
  name: string;
  paused: Bool;
  last_run_at: Time | null;
  next_run_at: Time | null;
  last_error: string | null;
  last_error_at: Time | null;
  failures: number;
  updated_at: Time;
  holder?: string | null;
  holder_until?: Time | null;
}

/** A `workers` row. */
export interface WorkerRowOf<Time, List> {
  id: string;
  host: string;
  pid: number;
  started_at: Time;
  last_heartbeat_at: Time;
  expires_at: Time;
  concurrency: number;
  queues: List;
  /** null in a row from before migration 21 */
  tasks: List | null;
  running: List;
}

const orNull = <T, R>(value: T | null | undefined, read: (v: T) => R): R | null => (value === null || value === undefined ? null : read(value));

/** The fields of a job that lists read as they are (every Job field but payload, checkpoint, result and errors). */
type JobFields = Omit<Job, 'payload' | 'checkpoint' | 'result' | 'errors'>;

/** The columns both a `jobs` row and a `jobList` row hold, mapped (times as Dates, trace context parsed). */
function readJobFields<I, T, J>(row: JobFieldsRowOf<I, T, J>, c: ColumnReader<I, T, J, unknown, unknown>): JobFields {
  const date = (value: T | null) => orNull(value, (v) => new Date(c.time(v)));
  return {
    id: c.id(row.id),
    queue: row.queue,
    task: row.task,
    state: row.state,
    priority: row.priority,
    runAt: new Date(c.time(row.run_at)),
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    key: row.key,
    progress: c.json(row.progress) as Job['progress'],
    cancelRequestedAt: date(row.cancel_requested_at),
    cancelReason: row.cancel_reason,
    createdAt: new Date(c.time(row.created_at)),
    startedAt: date(row.started_at),
    finishedAt: date(row.finished_at),
    leaseOwner: row.lease_owner,
    leaseExpiresAt: date(row.lease_expires_at),
    scheduleName: row.schedule_name ?? null,
    scheduledFor: date(row.scheduled_for),
    concurrencyKey: row.concurrency_key ?? null,
    concurrencyLimit: row.concurrency_limit ?? null,
    traceContext: c.json(row.trace_context ?? null) as Job['traceContext'],
    wait: readWait(c.json(row.wait ?? null) as StoredWait | null),
    parentId: orNull(row.parent_id, (v) => c.id(v)),
  };
}

/** A job's `wait` as stored: times in ms since the epoch. */
interface StoredWait {
  kind: JobWait['kind'];
  until: number;
  topic?: string;
  ids?: number[];
}

/** The stored wait as a JobWait (times as Dates). */
function readWait(stored: StoredWait | null): JobWait | null {
  if (stored === null) return null;
  if (stored.kind === 'message') return { kind: 'message', topic: stored.topic!, until: new Date(stored.until) };
  if (stored.kind === 'children') return { kind: 'children', ids: stored.ids ?? [], until: new Date(stored.until) };
  return { kind: 'sleep', until: new Date(stored.until) };
}

/** Maps a `jobs` row to the public Job shape (JSON parsed, times as Dates). */
function readJob<I, T, J>(row: JobRowOf<I, T, J>, c: ColumnReader<I, T, J, unknown, unknown>): Job {
  const errors = c.json(row.errors) as Array<Omit<JobError, 'time'> & { time: number }>;
  return {
    ...readJobFields(row, c),
    payload: c.json(row.payload) as Job['payload'],
    checkpoint: c.json(row.checkpoint) as Job['checkpoint'],
    result: c.json(row.result) as Job['result'],
    errors: errors.map((e) => ({ ...e, time: new Date(e.time) })),
  };
}

/** A preview from the start of a text and its whole size: truncated when the start is smaller. */
function preview(head: string, bytes: number): Preview {
  return { text: head, bytes, truncated: Buffer.byteLength(head, 'utf8') < bytes };
}

/** Maps a `jobList` row to the public JobSummary shape. */
function readJobSummary<I, T, J>(row: JobSummaryRowOf<I, T, J>, c: ColumnReader<I, T, J, unknown, unknown>): JobSummary {
  const previewOf = (head: string | null, bytes: number | null) => (head === null || bytes === null ? null : preview(head, bytes));
  return {
    ...readJobFields(row, c),
    payloadPreview: preview(row.payload_head, row.payload_bytes),
    checkpointPreview: previewOf(row.checkpoint_head, row.checkpoint_bytes),
    resultPreview: previewOf(row.result_head, row.result_bytes),
    errorCount: row.error_count,
    lastError: row.last_error_attempt === null || row.last_error_time === null
      ? null
      : { attempt: row.last_error_attempt, time: new Date(row.last_error_time), message: preview(row.last_error_head ?? '', row.last_error_bytes ?? 0) },
  };
}

/**
 * The Job that `jobInsertMany` has just written for `job`, equal to what {@link readJob}
 * maps its row to, same keys in the same order: the inserted values, the columns'
 * defaults for the rest (state queued, attempt 0, no errors, no lease, no schedule)
 * and the id the database drew. Lets a driver read back only the ids of the rows it
 * inserted (parsing whole rows was most of a bulk enqueue's time); the conformance
 * suite compares the two for every kind of insert.
 * @param id - the id the database gave the row
 * @param now - the insert's `now`, ms since the epoch: the job's `createdAt`
 * @throws SyntaxError only on a `payload` or `traceContext` that is not JSON text
 */
export function insertedJob(job: NewJob, id: number, now: number): Job {
  return {
    id,
    queue: job.queue,
    task: job.task,
    state: 'queued',
    priority: job.priority,
    runAt: new Date(job.runAt),
    attempt: 0,
    maxAttempts: job.maxAttempts,
    timeoutMs: job.timeoutMs,
    key: job.key,
    progress: null,
    cancelRequestedAt: null,
    cancelReason: null,
    createdAt: new Date(now),
    startedAt: null,
    finishedAt: null,
    leaseOwner: null,
    leaseExpiresAt: null,
    scheduleName: null,
    scheduledFor: null,
    concurrencyKey: job.concurrencyKey ?? null,
    concurrencyLimit: job.concurrencyLimit ?? null,
    traceContext: job.traceContext === undefined || job.traceContext === null ? null : (JSON.parse(job.traceContext) as Job['traceContext']),
    wait: null,
    parentId: null,
    payload: JSON.parse(job.payload) as Job['payload'],
    checkpoint: null,
    result: null,
    errors: [],
  };
}

/** A claimed `jobs` row: the Job plus the fencing token of this claim. */
function readClaimedJob<I, T, J>(row: JobRowOf<I, T, J>, c: ColumnReader<I, T, J, unknown, unknown>): ClaimedJob {
  return { ...readJob(row, c), leaseToken: row.lease_token };
}

/** A `jobs` row with its stored timeline (events as stored: times in ms). */
function readJobTimeline<I, T, J>(row: JobRowOf<I, T, J>, c: ColumnReader<I, T, J, unknown, unknown>): JobTimelineRecord {
  return { job: readJob(row, c), events: c.json(row.timeline) as StoredJobEvent[], leaseToken: row.lease_token, lastWorker: row.last_worker };
}

/** Maps a `schedules` row (`payload` kept as JSON text, times in ms). */
function readSchedule<I, T, J, B>(row: ScheduleRowOf<I, T, J, B>, c: ColumnReader<I, T, J, B, unknown>): ScheduleRecord {
  return {
    name: row.name,
    cron: row.cron,
    everyMs: orNull(row.every_ms, (v) => c.id(v)),
    timezone: row.timezone,
    task: row.task,
    payload: c.jsonText(row.payload),
    queue: row.queue,
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    catchUp: row.catch_up,
    catchUpLimit: row.catch_up_limit,
    overlap: row.overlap,
    paused: c.bool(row.paused),
    nextRunAt: orNull(row.next_run_at, (v) => c.time(v)),
    lastRunAt: orNull(row.last_run_at, (v) => c.time(v)),
    lastWorker: row.last_worker,
    createdAt: c.time(row.created_at),
    updatedAt: c.time(row.updated_at),
  };
}

/** Maps a `services` row (times in ms; holder null when the row was read without its lease). */
function readService<T, B>(row: ServiceRowOf<T, B>, c: ColumnReader<unknown, T, unknown, B, unknown>): ServiceRecord {
  return {
    name: row.name,
    paused: c.bool(row.paused),
    lastRunAt: orNull(row.last_run_at, (v) => c.time(v)),
    nextRunAt: orNull(row.next_run_at, (v) => c.time(v)),
    lastError: row.last_error,
    lastErrorAt: orNull(row.last_error_at, (v) => c.time(v)),
    failures: row.failures,
    updatedAt: c.time(row.updated_at),
    holder: row.holder ?? null,
    holderUntil: orNull(row.holder_until, (v) => c.time(v)),
  };
}

/** Maps a `workers` row (times in ms). */
function readWorker<T, L>(row: WorkerRowOf<T, L>, c: ColumnReader<unknown, T, unknown, unknown, L>): WorkerRecord {
  return {
    id: row.id,
    host: row.host,
    pid: row.pid,
    startedAt: c.time(row.started_at),
    lastHeartbeatAt: c.time(row.last_heartbeat_at),
    expiresAt: c.time(row.expires_at),
    concurrency: row.concurrency,
    queues: c.list(row.queues) as string[],
    tasks: orNull(row.tasks, (v) => c.list(v) as string[]),
    running: c.list(row.running).map(Number),
  };
}

/**
 * The row mappers of a driver whose columns read as `reader` says: `rowToJob`,
 * `rowToClaimedJob` (with the lease token), `rowToJobTimeline` (with the stored timeline), `rowToJobSummary` (a list's previews), `rowToSchedule`, `rowToService`,
 * `rowToWorker`. Pure functions; they throw only on a malformed JSON column.
 */
export function rowMappers<I, T, J, B, L>(reader: ColumnReader<I, T, J, B, L>) {
  return {
    rowToJob: (row: JobRowOf<I, T, J>): Job => readJob(row, reader),
    rowToClaimedJob: (row: JobRowOf<I, T, J>): ClaimedJob => readClaimedJob(row, reader),
    rowToJobTimeline: (row: JobRowOf<I, T, J>): JobTimelineRecord => readJobTimeline(row, reader),
    rowToJobSummary: (row: JobSummaryRowOf<I, T, J>): JobSummary => readJobSummary(row, reader),
    rowToSchedule: (row: ScheduleRowOf<I, T, J, B>): ScheduleRecord => readSchedule(row, reader),
    rowToService: (row: ServiceRowOf<T, B>): ServiceRecord => readService(row, reader),
    rowToWorker: (row: WorkerRowOf<T, L>): WorkerRecord => readWorker(row, reader),
  };
}
