import { ConfigError, ConflictError } from '../../errors.js';
import { PREVIEW_CHARS, type ClaimedJob, type Job, type JobSummary } from '../../job/types.js';
import { END_ATTEMPT } from '../constants.js';
import { insertedJob, JOB_SUMMARY_COLUMNS } from '../rows.js';
import { followUpsOf, hasFollowUps } from '../follow-ups.js';
import type { CancelOutcome, CompletedJobs, InsertedJob, JobTimelineRecord, NewJob, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { applyKeyStrategies } from './key-strategies.js';
import { byPlaceInLine } from '../../job/line.js';
import { rowToClaimedJob, rowToJob, rowToJobSummary, rowToJobTimeline, type JobRow, type JobSummaryRow } from './rows.js';
import { DELETE_MOVED, finishedInsert, jobTable, moveBack } from './move.js';
import { CANCEL_CHILDREN, CANCEL_REQUESTED, withEvent } from './timeline.js';

/** The jobs operations of the SQLite driver; see the Store interface for each contract. */

const APPEND_ERROR = `errors = json_insert(errors, '$[#]', json(@error))`;
const RETRY_SCHEDULED = `timeline = ${withEvent(`'type', 'retryScheduled', 'at', @now, 'runAt', @retryAt, 'error', json_extract(@error, '$.message')`)}`;
/** The event of a release, by its cause (see ReleaseCause). */
const RELEASED = {
  shutdown: withEvent(`'type', 'released', 'at', @now, 'runAt', coalesce(@runAt, run_at)`),
  snooze: withEvent(`'type', 'snoozed', 'at', @now, 'runAt', @runAt, 'rateLimited', json('false')`),
  rateLimited: withEvent(`'type', 'snoozed', 'at', @now, 'runAt', @runAt, 'rateLimited', json('true')`),
};
/** The event of a promotion at @now: the runAt the job had. */
const PROMOTED = withEvent(`'type', 'promoted', 'at', @now, 'runAt', run_at`, { attempt: false });
const INSERT_COLUMNS = 'queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at, concurrency_key, concurrency_limit, trace_context';
const LIVE_KEY = `key = ? AND state IN ('queued','running')`;

/** Most rows one INSERT of {@link insertRowsSql} writes (12 parameters a row). */
const INSERT_CHUNK = 128;
/** {@link insertRowsSql}'s texts, by row count. */
const insertTexts: string[] = [];
/** A multi-row INSERT … VALUES of `rows` jobs (12 parameters a row, as {@link insertJobs} binds them), returning their ids. */
const insertRowsSql = (rows: number): string =>
  (insertTexts[rows] ??= `INSERT INTO jobs (${INSERT_COLUMNS}) VALUES ${Array(rows).fill("(?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(', ')} RETURNING id`);

/**
 * Inserts `jobs` at `now` (no key lookup: the caller did it) and appends each one's
 * Job to `out`, in order. Multi-row INSERT … VALUES statements: chunks of
 * {@link INSERT_CHUNK} rows, the rest in power-of-two chunks (64, 32, … 1), so at most
 * 8 statements are prepared per connection; about 1.6× faster than one INSERT … SELECT
 * FROM json_each, which was 2.5× faster than a statement per row. Only the ids come
 * back: each Job is built from what was inserted (insertedJob), as reading whole rows
 * back and mapping them took two thirds of a bulk enqueue's time.
 */
function insertJobs(ctx: SqliteContext, jobs: NewJob[], now: number, out: InsertedJob[]): void {
  for (let from = 0; from < jobs.length;) {
    const chunk = jobs.slice(from, from + Math.min(INSERT_CHUNK, 2 ** Math.floor(Math.log2(jobs.length - from))));
    const values: unknown[] = [];
    for (const j of chunk) values.push(j.queue, j.task, j.payload, j.priority, j.runAt, j.maxAttempts, j.timeoutMs, j.key, now, j.concurrencyKey ?? null, j.concurrencyLimit ?? null, j.traceContext ?? null);
    // Ids are drawn in VALUES order, the chunk's (RETURNING's order is not defined: sorted).
    const ids = (ctx.sql(insertRowsSql(chunk.length)).pluck().all(values) as number[]).sort((a, b) => a - b);
    ids.forEach((id, i) => out.push({ job: insertedJob(chunk[i]!, id, now), created: true }));
    from += chunk.length;
  }
}

export async function jobInsertMany(ctx: SqliteContext, { jobs, now, client }: StoreParams<'jobInsertMany'>): Promise<InsertedJob[]> {
  if (client) throw new ConfigError('transactional enqueue ({ client }) needs the PostgreSQL driver; on SQLite enqueue without it');
  return insertMany(ctx, jobs, now);
}

/** jobInsertMany in the caller's write transaction, or one of its own. */
export function insertMany(ctx: SqliteContext, jobs: NewJob[], now: number): InsertedJob[] {
  const findByKey = ctx.sql(`SELECT * FROM jobs WHERE ${LIVE_KEY}`);
  return ctx.transaction(() => {
    const out: InsertedJob[] = [];
    // Runs of jobs without a key go in together; a keyed job alone, after its key's lookup.
    let run: NewJob[] = [];
    for (const job of jobs) {
      if (job.key === null) {
        run.push(job);
        continue;
      }
      insertJobs(ctx, run, now, out);
      run = [];
      const existing = findByKey.get(job.key) as JobRow | undefined;
      if (existing) out.push({ job: rowToJob(existing), created: false });
      else insertJobs(ctx, [job], now, out);
    }
    insertJobs(ctx, run, now, out);
    // out is in input order, as are jobs.
    const created = out.flatMap((o, i) => (o.created ? [{ id: o.job.id, job: jobs[i]! }] : []));
    if (!applyKeyStrategies(ctx, created, now)) return out;
    // A strategy may have cancelled a job just inserted, moving it to jobs_finished.
    const reread = ctx.sql('SELECT * FROM jobs_all WHERE id = ?');
    return out.map((o) => (o.created ? { job: rowToJob(reread.get(o.job.id) as JobRow), created: true } : o));
  });
}

/** A room no limit reaches: what `min` compares a queue's missing limit as. */
const NO_LIMIT = 2_147_483_647;
/** A key's starts left in its queue's per-key rate window (migration 13); NULL when the queue has no per-key rate. */
const KEY_RATE_ROOM = `SELECT r.key_rate_limit - (SELECT count(*) FROM rate_limit_starts s INDEXED BY rate_limit_starts_key
    WHERE s.queue = k.queue AND s.key = k.key AND s.started_at > @now - r.key_rate_period_ms)
  FROM queues r WHERE r.name = k.queue AND r.key_rate_limit IS NOT NULL`;

export async function jobClaim(ctx: SqliteContext, p: StoreParams<'jobClaim'>): Promise<ClaimedJob[]> {
  return claim(ctx, p);
}

/**
 * The priorities of each queue of `avail(queue)` that has queued unkeyed jobs, by a
 * loose scan of jobs_claim (queue, priority, run_at, id), one probe per priority; then
 * per (queue, priority) a range scan bounded by run_at <= now that stops after @limit
 * rows, so jobs not yet due are never read: the CTEs `prio` and `unkeyed` (id, queue,
 * priority, run_at, turn 1).
 */
const UNKEYED = `prio(queue, priority) AS (
      SELECT queue, (SELECT priority FROM jobs INDEXED BY jobs_claim WHERE state = 'queued' AND concurrency_key IS NULL AND jobs.queue = avail.queue ORDER BY priority LIMIT 1)
      FROM avail
      UNION ALL
      SELECT queue, (SELECT priority FROM jobs INDEXED BY jobs_claim WHERE state = 'queued' AND concurrency_key IS NULL AND jobs.queue = prio.queue AND jobs.priority > prio.priority ORDER BY priority LIMIT 1)
      FROM prio WHERE priority IS NOT NULL
    ), unkeyed AS (
      SELECT j.id, j.queue, j.priority, j.run_at, 1 AS turn
      FROM prio JOIN jobs j ON j.id IN (
        SELECT id FROM jobs INDEXED BY jobs_claim
        WHERE state = 'queued' AND concurrency_key IS NULL AND queue = prio.queue AND priority = prio.priority AND run_at <= @now
          AND task IN (SELECT value FROM json_each(@tasks))
        ORDER BY run_at, id LIMIT @limit)
      WHERE prio.priority IS NOT NULL
    )`;

/** The SET clause of a claim: running, attempt + 1, a lease for @workerId until @expires under a new token, started @now. */
const START = `state = 'running', attempt = attempt + 1, lease_owner = @workerId,
      lease_expires_at = @expires, lease_token = lease_token + 1, started_at = @now`;

/** 1 when no queue of the JSON array @queues has a concurrency or rate limit and none holds a queued keyed job. */
const PLAIN_CLAIM_APPLIES = `SELECT NOT EXISTS (SELECT 1 FROM queues WHERE name IN (SELECT value FROM json_each(@queues)) AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL))
  AND NOT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_claim_keyed WHERE state = 'queued' AND concurrency_key IS NOT NULL AND queue IN (SELECT value FROM json_each(@queues)))`;

/**
 * jobClaim in the caller's write transaction, or one of its own. When no served queue
 * has a concurrency or rate limit and none holds a queued keyed job (read in the same
 * transaction: no other writer can change that before the update), the claim is the
 * plain one of issue 4 — unkeyed jobs by priority, runAt, id — which skips the limit,
 * key and turn bookkeeping that made a claim of 10 cost ~2 ms (issue 14); else the full
 * claim below.
 */
function claim(ctx: SqliteContext, p: StoreParams<'jobClaim'>): ClaimedJob[] {
  const params = { workerId: p.workerId, expires: p.now + p.leaseMs, now: p.now, queues: JSON.stringify(p.queues), tasks: JSON.stringify(p.tasks), limit: p.limit };
  const rows = ctx.transaction(() => {
    const plain = ctx.sql(PLAIN_CLAIM_APPLIES).pluck().get({ queues: params.queues }) === 1;
    return (plain ? claimPlain(ctx, params) : claimFlow(ctx, params));
  });
  return rows.map(rowToClaimedJob).sort(byPlaceInLine);
}

type ClaimParams = { workerId: string; expires: number; now: number; queues: string; tasks: string; limit: number };

/** The claim without limits, keys or rates: the best @limit unkeyed jobs of the unpaused served queues. */
function claimPlain(ctx: SqliteContext, params: ClaimParams): JobRow[] {
  return ctx.sql(CLAIM_PLAIN).all(params) as JobRow[];
}

/**
 * {@link claimPlain}'s statement. The SQL texts of the hot path are built once, not per
 * call: the statement cache is keyed by the text, and building and hashing a 1 KB text
 * every cycle showed in the drain's CPU profile (issue 14).
 */
const CLAIM_PLAIN = `WITH RECURSIVE avail(queue) AS (
      SELECT DISTINCT value FROM json_each(@queues) WHERE value NOT IN (SELECT name FROM queues WHERE paused_at IS NOT NULL)
    ), ${UNKEYED}
    UPDATE jobs SET ${START}
    WHERE id IN (SELECT id FROM unkeyed ORDER BY priority, run_at, id LIMIT @limit)
    RETURNING *`;

/** The claim with limits, keys and rates. */
function claimFlow(ctx: SqliteContext, params: ClaimParams): JobRow[] {
  // As on PostgreSQL: the unkeyed jobs as UNKEYED reads them. Keyed jobs (migration
  // 12): up to @limit keys with room and a due job, in turn order (fewest running, then
  // longest since one of theirs started), and up to `limit − running` due jobs of each.
  // Every job gets a turn (its key's running count plus its place in the key; unkeyed: 1),
  // and the best @limit by turn, priority, run_at and id are claimed. A queue with a
  // concurrency limit (migration 11) gets at most `room` = limit − its running jobs; one
  // with a rate limit (migration 13), at most rate − its starts in the window (the lesser
  // of the two), and a key under a per-key rate at most its own rate room. RATE_STARTS
  // then logs each start a rate counts, in the same transaction.
  // Every count is read in this same write transaction: SQLite runs one writer at a time,
  // so no other claim can start jobs between the count and the update.
  const rows = ctx.sql(CLAIM_FLOW).all(params) as JobRow[];
  if (rows.length > 0) ctx.sql(RATE_STARTS).run({ ids: JSON.stringify(rows.map((r) => r.id)) });
  return rows;
}

/**
 * The starts a rate counts of the jobs @ids (a JSON array) just claimed: one row each
 * whose queue has a rate, or a per-key rate and the job a key (migration 13). Only a
 * claim starts a job, and the plain claim serves no queue with a rate nor keyed jobs,
 * so this is written here, not by a trigger every claimed row would run (migration 25).
 */
const RATE_STARTS = `INSERT INTO rate_limit_starts (queue, key, started_at)
  SELECT j.queue, j.concurrency_key, j.started_at FROM jobs j
  WHERE j.id IN (SELECT value FROM json_each(@ids)) AND EXISTS (SELECT 1 FROM queues WHERE name = j.queue
    AND (rate_limit IS NOT NULL OR (key_rate_limit IS NOT NULL AND j.concurrency_key IS NOT NULL)))`;

/** {@link claimFlow}'s statement (see {@link CLAIM_PLAIN} for why a constant). */
const CLAIM_FLOW = `WITH RECURSIVE served(queue, room) AS (
      SELECT DISTINCT value, (SELECT min(
          coalesce(CASE WHEN l.concurrency IS NOT NULL THEN l.concurrency - (SELECT count(*) FROM jobs INDEXED BY jobs_running_queue WHERE state = 'running' AND jobs.queue = value) END, ${NO_LIMIT}),
          coalesce(CASE WHEN l.rate_limit IS NOT NULL THEN l.rate_limit - (SELECT count(*) FROM rate_limit_starts INDEXED BY rate_limit_starts_queue
            WHERE rate_limit_starts.queue = value AND started_at > @now - l.rate_period_ms) END, ${NO_LIMIT}))
        FROM queues l WHERE l.name = value AND (l.concurrency IS NOT NULL OR l.rate_limit IS NOT NULL))
      FROM json_each(@queues) WHERE value NOT IN (SELECT name FROM queues WHERE paused_at IS NOT NULL)
    ), avail(queue, room) AS (
      SELECT queue, room FROM served WHERE room IS NULL OR room > 0
    ), ${UNKEYED}, turns AS (
      SELECT k.queue, k.key, k.running, k.max_running, (${KEY_RATE_ROOM}) AS rate_room FROM concurrency_keys k INDEXED BY concurrency_keys_turn
      WHERE k.queued > 0 AND k.queue IN (SELECT queue FROM avail) AND (k.max_running IS NULL OR k.running < k.max_running)
        AND coalesce((${KEY_RATE_ROOM}), 1) > 0
        AND EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_claim_keyed WHERE state = 'queued' AND queue = k.queue AND concurrency_key = k.key
          AND run_at <= @now AND task IN (SELECT value FROM json_each(@tasks)))
      ORDER BY k.running, k.last_started_at, k.key, k.queue
      LIMIT @limit
    ), keyed AS (
      SELECT id, queue, priority, run_at, running + n AS turn FROM (
        SELECT j.id, j.queue, j.priority, j.run_at, t.running, t.max_running, t.rate_room,
          row_number() OVER (PARTITION BY t.queue, t.key ORDER BY j.priority, j.run_at, j.id) AS n
        FROM turns t JOIN jobs j ON j.id IN (
          SELECT id FROM jobs INDEXED BY jobs_claim_keyed
          WHERE state = 'queued' AND queue = t.queue AND concurrency_key = t.key AND run_at <= @now
            AND task IN (SELECT value FROM json_each(@tasks))
          ORDER BY priority, run_at, id LIMIT @limit)
      ) WHERE (max_running IS NULL OR n <= max_running - running) AND (rate_room IS NULL OR n <= rate_room)
    ), ranked AS (
      SELECT c.id, c.priority, c.run_at, c.turn, avail.room,
        row_number() OVER (PARTITION BY c.queue ORDER BY c.turn, c.priority, c.run_at, c.id) AS n
      FROM (SELECT id, queue, priority, run_at, turn FROM unkeyed UNION ALL SELECT id, queue, priority, run_at, turn FROM keyed) c
      JOIN avail ON avail.queue = c.queue
    )
    UPDATE jobs SET ${START}
    WHERE id IN (SELECT id FROM ranked WHERE room IS NULL OR n <= room ORDER BY turn, priority, run_at, id LIMIT @limit)
    RETURNING *`;

export async function jobCompleteMany(ctx: SqliteContext, p: StoreParams<'jobCompleteMany'>): Promise<CompletedJobs> {
  return hasFollowUps(p.items) ? ctx.transaction(() => complete(ctx, p)) : complete(ctx, p);
}

export async function jobCompleteAndClaim(ctx: SqliteContext, p: StoreParams<'jobCompleteAndClaim'>): Promise<CompletedJobs & { claimed: ClaimedJob[] }> {
  // One write transaction, one commit; the claim reads the completions (and follow-ups) it follows.
  return ctx.transaction(() => ({ ...complete(ctx, p), claimed: claim(ctx, p) }));
}

/** jobCompleteMany's statements, then the completed items' follow-ups (in the caller's transaction when there are any). */
function complete(ctx: SqliteContext, { items, now }: StoreParams<'jobCompleteMany'>): CompletedJobs {
  if (items.length === 0) return { completed: [], enqueued: [] };
  const completed = ctx.transaction(() => {
    const ids = ctx.sql(COMPLETE).pluck().all({ now, items: JSON.stringify(items.map((i) => [i.id, i.token, i.result])) }) as number[];
    if (ids.length > 0) ctx.sql(DELETE_MOVED).run({ ids: JSON.stringify(ids) });
    return ids;
  });
  if (!hasFollowUps(items)) return { completed, enqueued: [] };
  const followUps = followUpsOf(items, completed);
  return { completed, enqueued: followUps.split(insertMany(ctx, followUps.jobs, now)) };
}

/**
 * {@link complete}'s move: the jobs of @items, a JSON array of [id, token, result], still
 * running under that token, copied to jobs_finished completed at @now (END_ATTEMPT's
 * values), then deleted from jobs.
 */
const COMPLETE = finishedInsert(
  { state: "'completed'", result: "json_extract(value, '$[2]')", finished_at: '@now', last_worker: 'j.lease_owner', wait: 'NULL', lease_owner: 'NULL', lease_expires_at: 'NULL' },
  'json_each(@items) JOIN jobs j ON j.id = json_extract(value, \'$[0]\')',
  "j.lease_token = json_extract(value, '$[1]') AND j.state = 'running'",
);

export async function jobFail(ctx: SqliteContext, { id, token, error, retryAt, now }: StoreParams<'jobFail'>): Promise<boolean> {
  const params = { id, token, now, retryAt, error: JSON.stringify(error) };
  if (retryAt === null) return fenced(ctx, `state = 'failed', finished_at = @now, ${APPEND_ERROR}, ${END_ATTEMPT}`, params);
  // A cancel requested while the attempt was failing wins over the retry (the request is never withdrawn while it runs).
  return ctx.transaction(
    () =>
      fenced(ctx, `state = 'queued', run_at = @retryAt, ${APPEND_ERROR}, ${RETRY_SCHEDULED}, ${END_ATTEMPT}`, params, 'cancel_requested_at IS NULL') ||
      fenced(ctx, `state = 'cancelled', finished_at = @now, ${APPEND_ERROR}, ${END_ATTEMPT}`, params, 'cancel_requested_at IS NOT NULL'),
  );
}

export async function jobFinishCancelled(ctx: SqliteContext, { id, token, now }: StoreParams<'jobFinishCancelled'>): Promise<boolean> {
  return fenced(ctx, `state = 'cancelled', finished_at = @now, ${END_ATTEMPT}`, { id, token, now });
}

export async function jobCheckpoint(ctx: SqliteContext, { id, token, checkpoint }: StoreParams<'jobCheckpoint'>): Promise<boolean> {
  return fenced(ctx, 'checkpoint = @checkpoint', { id, token, checkpoint });
}

export async function jobProgress(ctx: SqliteContext, { id, token, progress }: StoreParams<'jobProgress'>): Promise<boolean> {
  return fenced(ctx, 'progress = @progress', { id, token, progress: JSON.stringify(progress) });
}

/** One fenced write: `set` applies only while job `@id` runs under lease `@token` (and `and` holds). */
function fenced(ctx: SqliteContext, set: string, params: Record<string, unknown>, and = 'TRUE'): boolean {
  return ctx.sql(`UPDATE jobs SET ${set} WHERE id = @id AND lease_token = @token AND state = 'running' AND ${and}`).run(params).changes === 1;
}

export async function jobRelease(ctx: SqliteContext, { leases, now, runAt, cause = 'shutdown' }: StoreParams<'jobRelease'>): Promise<number[]> {
  if (leases.length === 0) return [];
  const rows = ctx.sql(`UPDATE jobs SET
      state = CASE WHEN cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
      finished_at = CASE WHEN cancel_requested_at IS NULL THEN NULL ELSE @now END,
      run_at = CASE WHEN cancel_requested_at IS NULL THEN coalesce(@runAt, run_at) ELSE @now END, attempt = attempt - 1,
      timeline = ${RELEASED[cause]}, ${END_ATTEMPT}
    WHERE state = 'running' AND (id, lease_token) IN
      (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(@leases))
    RETURNING id`).all({ now, runAt: runAt ?? null, leases: JSON.stringify(leases.map((l) => [l.id, l.token])) }) as Array<{ id: number }>;
  return rows.map((r) => r.id);
}

export async function jobCancel(ctx: SqliteContext, { id, reason, by = null, now }: StoreParams<'jobCancel'>): Promise<{ job: Job; outcome: CancelOutcome } | null> {
  return ctx.transaction(() => {
    const row = ctx.sql('SELECT state FROM jobs_all WHERE id = ?').get(id) as { state: string } | undefined;
    if (!row) return null;
    let outcome: CancelOutcome = 'unchanged';
    if (row.state === 'queued') {
      ctx.sql(`UPDATE jobs SET state = 'cancelled', cancel_requested_at = @now, cancel_reason = @reason, finished_at = @now,
        timeline = ${CANCEL_REQUESTED.queued} WHERE id = @id`).run({ id, now, reason, by });
      outcome = 'cancelled';
    } else if (row.state === 'running') {
      ctx.sql(`UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, @now),
        cancel_reason = coalesce(cancel_reason, @reason), timeline = ${CANCEL_REQUESTED.running} WHERE id = @id`).run({ id, now, reason, by });
      outcome = 'requested';
    }
    if (outcome !== 'unchanged') for (const statement of CANCEL_CHILDREN) ctx.sql(statement).run({ parents: `[${id}]`, now });
    return { job: rowToJob(ctx.sql('SELECT * FROM jobs_all WHERE id = ?').get(id) as JobRow), outcome };
  });
}

export async function jobRetry(ctx: SqliteContext, { id, now, fresh = false }: StoreParams<'jobRetry'>): Promise<{ job: Job; retried: boolean } | null> {
  return ctx.transaction(() => {
    const row = ctx.sql('SELECT * FROM jobs_all WHERE id = ?').get(id) as JobRow | undefined;
    if (!row) return null;
    if (row.state !== 'failed' && row.state !== 'cancelled') return { job: rowToJob(row), retried: false };
    if (row.key !== null && ctx.sql(`SELECT 1 FROM jobs WHERE ${LIVE_KEY}`).get(row.key)) {
      throw new ConflictError(`job ${id} cannot be retried: another job with key "${row.key}" is queued or running`, row.state);
    }
    moveBack(ctx, id, now, fresh);
    return { job: rowToJob(ctx.sql('SELECT * FROM jobs WHERE id = ?').get(id) as JobRow), retried: true };
  });
}

export async function jobPromote(ctx: SqliteContext, { id, now }: StoreParams<'jobPromote'>): Promise<{ job: Job; promoted: boolean } | null> {
  return ctx.transaction(() => {
    const promoted = ctx.sql(`UPDATE jobs SET run_at = @now, timeline = ${PROMOTED} WHERE id = @id AND state = 'queued' AND run_at > @now AND wait IS NULL RETURNING *`).get({ id, now }) as JobRow | undefined;
    if (promoted) return { job: rowToJob(promoted), promoted: true };
    const row = ctx.sql('SELECT * FROM jobs_all WHERE id = ?').get(id) as JobRow | undefined;
    return row ? { job: rowToJob(row), promoted: false } : null;
  });
}

export async function jobGet(ctx: SqliteContext, { id }: StoreParams<'jobGet'>): Promise<Job | null> {
  const row = ctx.sql('SELECT * FROM jobs_all WHERE id = ?').get(id) as JobRow | undefined;
  return row ? rowToJob(row) : null;
}

export async function jobTimeline(ctx: SqliteContext, { id }: StoreParams<'jobTimeline'>): Promise<JobTimelineRecord | null> {
  const row = ctx.sql('SELECT * FROM jobs_all WHERE id = ?').get(id) as JobRow | undefined;
  return row ? rowToJobTimeline(row) : null;
}

/**
 * What `jobList` reads of a row: the plain columns, and of each large value its first
 * PREVIEW_CHARS characters (substr counts characters of TEXT) and its size in bytes
 * (octet_length: UTF-8 bytes), so the whole value is never read into JavaScript.
 */
const SUMMARY = `${JOB_SUMMARY_COLUMNS},
  substr(payload, 1, ${PREVIEW_CHARS}) AS payload_head, octet_length(payload) AS payload_bytes,
  substr(result, 1, ${PREVIEW_CHARS}) AS result_head, octet_length(result) AS result_bytes,
  substr(checkpoint, 1, ${PREVIEW_CHARS}) AS checkpoint_head, octet_length(checkpoint) AS checkpoint_bytes,
  json_array_length(errors) AS error_count, errors ->> '$[#-1].attempt' AS last_error_attempt, errors ->> '$[#-1].time' AS last_error_time,
  substr(errors ->> '$[#-1].message', 1, ${PREVIEW_CHARS}) AS last_error_head, octet_length(errors ->> '$[#-1].message') AS last_error_bytes`;

export async function jobList(ctx: SqliteContext, p: StoreParams<'jobList'>): Promise<JobSummary[]> {
  // Only the filters given go into the text, so SQLite can pick the index that fits.
  const where = ['1 = 1'];
  if (p.state) where.push('state = @state');
  if (p.queue) where.push('queue = @queue');
  if (p.task) where.push('task = @task');
  if (p.beforeId !== undefined) where.push('id < @beforeId');
  // One query over the table(s) the state filter needs (jobTable).
  const rows = ctx.sql(`SELECT ${SUMMARY} FROM ${jobTable(p.state ? [p.state] : undefined)} WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT @limit`).all({
    state: p.state ?? null,
    queue: p.queue ?? null,
    task: p.task ?? null,
    beforeId: p.beforeId ?? null,
    limit: p.limit,
  }) as JobSummaryRow[];
  return rows.map(rowToJobSummary);
}
