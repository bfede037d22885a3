import { ConflictError } from '../../errors.js';
import { PREVIEW_CHARS, type ClaimedJob, type Job, type JobSummary, type TransactionClient } from '../../job/types.js';
import { END_ATTEMPT } from '../constants.js';
import { hasKeyStrategy } from '../key-strategies.js';
import { insertedJob, JOB_SUMMARY_COLUMNS } from '../rows.js';
import { followUpsOf, hasFollowUps } from '../follow-ups.js';
import type { CompletedJobs, InsertedJob, JobTimelineRecord, NewJob, ReleaseCause, StoreParams } from '../store.js';
import { ASYNC_COMMIT, date, type PgContext } from './context.js';
import { ENDED_ATTEMPT, FRESH_STEPS, moveJobs, RETRIED } from './move.js';
import { handBackSql } from './hand-back.js';
import { applyKeyStrategies } from './key-strategies.js';
import { byPlaceInLine } from '../../job/line.js';
import { rowToClaimedJob, rowToJob, rowToJobSummary, rowToJobTimeline, type JobRow, type JobSummaryRow } from './rows.js';
import { ms, withEvent } from './timeline.js';

/** The jobs operations of the PostgreSQL driver; see the Store interface for each contract. */

const APPEND_ERROR = 'errors = errors || jsonb_build_array($4::jsonb)';
/** The event of a release (`$3` now, `$4` runAt or null: the row's own), by its cause (see ReleaseCause), on row `r` (alias with its dot). */
const released = (cause: ReleaseCause, r: string) =>
  withEvent(cause === 'shutdown'
    ? `'type', 'released', 'at', ${ms('$3::timestamptz')}, 'runAt', ${ms(`coalesce($4::timestamptz, ${r}run_at)`)}`
    : `'type', 'snoozed', 'at', ${ms('$3::timestamptz')}, 'runAt', ${ms('$4::timestamptz')}, 'rateLimited', ${cause === 'rateLimited'}`, { row: r });
/**
 * jobInsertMany's statement (`$1`..`$13`: see {@link insertValues}): the jobs inserted
 * with ids drawn in input order, `keyed`: only those whose key no queued or running job
 * holds (ON CONFLICT: a speculative insertion per row, which a batch without keys skips).
 * Returns the id and key of each row inserted, in id order; only those: each Job is built
 * from what was inserted (insertedJob), as parsing whole rows read back took a third of
 * a bulk enqueue's time.
 */
const insertJobs = (keyed: boolean) => `
  WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[], $7::int[], $8::text[], $9::int[], $11::text[], $12::int[], $13::text[])
      AS t(queue, task, payload, priority, run_at, max_attempts, timeout_ms, key, ord, concurrency_key, concurrency_limit, trace_context)
  ), ins AS (
    INSERT INTO :schema.jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at, concurrency_key, concurrency_limit, trace_context)
    SELECT queue, task, payload::json, 'queued', priority, run_at, max_attempts, timeout_ms, key, $10, concurrency_key, concurrency_limit, trace_context::json FROM input ORDER BY ord
    ${keyed ? "ON CONFLICT (key) WHERE key IS NOT NULL AND state IN ('queued','running') DO NOTHING" : ''}
    RETURNING id, key
  )
  SELECT id, key FROM ins ORDER BY id`;
const INSERT_KEYED = insertJobs(true);
const INSERT_UNKEYED = insertJobs(false);

/** The values of {@link insertJobs}' statement for `pending`, inserted at `now`. */
const insertValues = (pending: Array<{ job: NewJob; index: number }>, now: number): unknown[] => [
  pending.map((p) => p.job.queue),
  pending.map((p) => p.job.task),
  pending.map((p) => p.job.payload),
  pending.map((p) => p.job.priority),
  pending.map((p) => date(p.job.runAt)),
  pending.map((p) => p.job.maxAttempts),
  pending.map((p) => p.job.timeoutMs),
  pending.map((p) => p.job.key),
  pending.map((p) => p.index),
  date(now),
  pending.map((p) => p.job.concurrencyKey ?? null),
  pending.map((p) => p.job.concurrencyLimit ?? null),
  pending.map((p) => p.job.traceContext ?? null),
];

export async function jobInsertMany(ctx: PgContext, { jobs, now, client }: StoreParams<'jobInsertMany'>): Promise<InsertedJob[]> {
  const keyed = jobs.some((job) => job.key !== null);
  if (!client && !keyed && !jobs.some(hasKeyStrategy)) {
    // Nothing to look up or apply after the insert: its one statement is atomic on its
    // own, so it runs as a prepared statement without BEGIN and COMMIT (one round trip
    // where the transaction took three). Rows are in id order, which is input order.
    const rows = await ctx.query<{ id: string }>('insert_jobs', INSERT_UNKEYED, insertValues(jobs.map((job, index) => ({ job, index })), now));
    return rows.map((row, i) => ({ job: insertedJob(jobs[i]!, Number(row.id), now), created: true }));
  }
  const run = async (db: TransactionClient) => {
    const results: Array<InsertedJob | undefined> = new Array(jobs.length);
    let pending = jobs.map((job, index) => ({ job, index }));
    // A key can be freed (its job finished) between the conflict and the read: try again.
    for (let round = 0; pending.length > 0; round++) {
      if (round === 5) throw new ConflictError('could not settle keyed enqueue after 5 rounds of concurrent changes');
      const inserted = (await db.query(ctx.sql(keyed ? INSERT_KEYED : INSERT_UNKEYED), insertValues(pending, now))).rows as Array<{ id: string; key: string | null }>;
      // Rows come back in id order, which is input order (ids are drawn in ORDER BY ord).
      // Which inputs were skipped: keyed ones whose key (now) has a live job.
      const insertedKeys = new Set(inserted.map((r) => r.key).filter((k) => k !== null));
      const skipped: typeof pending = [];
      const claimedKeys = new Set<string>();
      const created: typeof pending = [];
      for (const p of pending) {
        const key = p.job.key;
        if (key !== null && (!insertedKeys.has(key) || claimedKeys.has(key))) skipped.push(p);
        else {
          if (key !== null) claimedKeys.add(key);
          created.push(p);
        }
      }
      created.forEach((p, i) => (results[p.index] = { job: insertedJob(p.job, Number(inserted[i]!.id), now), created: true }));
      if (skipped.length === 0) break;
      const live = (await db.query(ctx.sql(`SELECT * FROM :schema.jobs WHERE key = ANY($1::text[]) AND state IN ('queued','running')`), [
        [...new Set(skipped.map((p) => p.job.key!))],
      ])).rows as JobRow[];
      const byKey = new Map(live.map((r) => [r.key!, r]));
      pending = [];
      for (const p of skipped) {
        const row = byKey.get(p.job.key!);
        if (row) results[p.index] = { job: rowToJob(row), created: false };
        else pending.push(p);
      }
    }
    const out = results as InsertedJob[];
    const created = out.flatMap((o, i) => (o.created ? [{ id: o.job.id, job: jobs[i]! }] : []));
    if (!(await applyKeyStrategies(ctx, db, created, now))) return out;
    const reread = new Map(((await db.query(ctx.sql('SELECT * FROM :schema.jobs_all WHERE id = ANY($1::bigint[])'), [created.map((c) => c.id)])).rows as JobRow[])
      .map((row) => [Number(row.id), rowToJob(row)]));
    return out.map((o) => (o.created ? { job: reread.get(o.job.id) ?? o.job, created: true } : o));
  };
  return client ? run(client) : ctx.transaction(run);
}

/** claim_jobs' arguments after its `now`, in order: queues (each once), tasks, limit, worker, lease expiry. */
const claimValues = (p: StoreParams<'jobClaim'>): unknown[] =>
  // Each queue once: a repeated name would scan its queue twice and return rows this
  // transaction already locked (SKIP LOCKED skips only other transactions' locks).
  [[...new Set(p.queues)], p.tasks, p.limit, p.workerId, date(p.now + p.leaseMs)];

/** Claimed rows in claim order (the function returns them in table order). */
const inClaimOrder = (rows: JobRow[]): ClaimedJob[] =>
  rows.map(rowToClaimedJob).sort(byPlaceInLine);

/** jobClaim's statement: `$1` now, then {@link claimValues}. */
const CLAIM = 'SELECT * FROM :schema.claim_jobs($1, $2, $3, $4, $5, $6)';

export async function jobClaim(ctx: PgContext, p: StoreParams<'jobClaim'>): Promise<ClaimedJob[]> {
  // One round trip: the function (migration 11) locks the served queues that have a
  // concurrency limit, then claims in a statement of its own that counts their running
  // jobs, so concurrent claimers never go over a limit.
  return inClaimOrder(await ctx.query<JobRow>('claim', CLAIM, [date(p.now), ...claimValues(p)]));
}

/**
 * The completion of a batch (`$1` ids, `$2` tokens, `$3` results, `$4` now): the CTEs
 * `completed_taken` and `completed`, moving each job still running under its token
 * to `jobs_finished`. With `asyncCommit` the statement names ASYNC_COMMIT's CTE first
 * (a batch without follow-ups); without, it commits durably (it enqueues follow-ups).
 */
const completion = (asyncCommit: boolean) => moveJobs({
  name: 'completed',
  from: 'jobs',
  using: `unnest($1::bigint[], $2::int[], $3::text[]) AS c(id, token, result)${asyncCommit ? ', async_commit' : ''}`,
  where: "j.id = c.id AND j.lease_token = c.token AND j.state = 'running'",
  set: { state: "'completed'", result: 'c.result::json', finished_at: '$4::timestamptz', ...ENDED_ATTEMPT },
  returning: 'id',
});
const COMPLETE = completion(true);
const COMPLETE_DURABLE = `WITH ${completion(false)} SELECT id FROM completed`;

const completeValues = ({ items, now }: StoreParams<'jobCompleteMany'>): unknown[] => [items.map((i) => i.id), items.map((i) => i.token), items.map((i) => i.result), date(now)];

export async function jobCompleteMany(ctx: PgContext, p: StoreParams<'jobCompleteMany'>): Promise<CompletedJobs> {
  if (p.items.length === 0) return { completed: [], enqueued: [] };
  if (hasFollowUps(p.items)) return ctx.transaction((db) => completeWithFollowUps(ctx, db, p));
  const rows = await ctx.query<{ id: string }>('complete_many', `WITH ${ASYNC_COMMIT}, ${COMPLETE} SELECT id FROM completed`, completeValues(p));
  return { completed: rows.map((r) => Number(r.id)), enqueued: [] };
}

/**
 * A batch with follow-ups, in the caller's transaction `db`: the completion (committed
 * durably, as an enqueue is), then the follow-ups of the items it completed, inserted
 * as jobInsertMany inserts them.
 */
async function completeWithFollowUps(ctx: PgContext, db: TransactionClient, p: StoreParams<'jobCompleteMany'>): Promise<CompletedJobs> {
  const completed = ((await db.query(ctx.sql(COMPLETE_DURABLE), completeValues(p))).rows as Array<{ id: string }>).map((r) => Number(r.id));
  const followUps = followUpsOf(p.items, completed);
  if (followUps.jobs.length === 0) return { completed, enqueued: [] };
  return { completed, enqueued: followUps.split(await jobInsertMany(ctx, { jobs: followUps.jobs, now: p.now, client: db })) };
}

export async function jobCompleteAndClaim(ctx: PgContext, p: StoreParams<'jobCompleteAndClaim'>): Promise<CompletedJobs & { claimed: ClaimedJob[] }> {
  if (p.items.length === 0) return { completed: [], enqueued: [], claimed: await jobClaim(ctx, p) };
  if (hasFollowUps(p.items)) {
    // Three statements in one transaction: the completion, the follow-ups, then the claim, which sees both.
    return ctx.transaction(async (db) => {
      const done = await completeWithFollowUps(ctx, db, p);
      const claimed = (await db.query(ctx.sql(CLAIM), [date(p.now), ...claimValues(p)])).rows as JobRow[];
      return { ...done, claimed: inClaimOrder(claimed) };
    });
  }
  // One statement: the completion's CTEs, then claim_jobs as a lateral function of their
  // result (its `now` is read from it), so it runs after them; a volatile function's
  // statements see what the calling statement wrote before them (SPI increments the
  // command counter), so the claim counts the completed jobs as ended. One row per
  // claimed job, the first carrying the completed ids (parsed once, not per row); one
  // row of NULLs but the ids when none was claimed.
  const rows = await ctx.query<JobRow & { completed_ids: string[] | null }>('complete_claim', `
    WITH ${ASYNC_COMMIT}, ${COMPLETE}, done AS (SELECT array_agg(id) AS ids, $4::timestamptz AS now FROM completed)
    SELECT CASE WHEN coalesce(c.ordinality, 1) = 1 THEN d.ids END AS completed_ids, c.*
    FROM done d LEFT JOIN LATERAL :schema.claim_jobs(d.now, $5, $6, $7, $8, $9) WITH ORDINALITY c ON true`,
  [...completeValues(p), ...claimValues(p)]);
  return {
    completed: (rows[0]?.completed_ids ?? []).map(Number),
    enqueued: [],
    claimed: inClaimOrder(rows.filter((r) => r.id !== null)),
  };
}

export async function jobFail(ctx: PgContext, { id, token, error, retryAt, now }: StoreParams<'jobFail'>): Promise<boolean> {
  const values = [id, token, date(retryAt ?? now), JSON.stringify(error)];
  // $3: run_at of the retry, or finished_at when failed for good.
  if (retryAt !== null) {
    const event = withEvent(`'type', 'retryScheduled', 'at', ${ms('$5::timestamptz')}, 'runAt', ${ms('$3::timestamptz')}, 'error', $4::jsonb ->> 'message'`);
    // A cancel requested while the attempt was failing wins over the retry: the job ends cancelled,
    // its error kept (a request is never withdrawn while the job runs, so the second statement sees it).
    if (await fenced(ctx, `state = 'queued', run_at = $3::timestamptz, ${APPEND_ERROR}, timeline = ${event}, ${END_ATTEMPT}`, [...values, date(now)], 'cancel_requested_at IS NULL')) return true;
    return fencedFinish(ctx, 'fail_cancelled', { state: "'cancelled'", finished_at: '$3', errors: 'j.errors || jsonb_build_array($4::jsonb)' }, [id, token, date(now), JSON.stringify(error)], 'j.cancel_requested_at IS NOT NULL');
  }
  return fencedFinish(ctx, 'fail', { state: "'failed'", finished_at: '$3', errors: 'j.errors || jsonb_build_array($4::jsonb)' }, values);
}

export async function jobFinishCancelled(ctx: PgContext, { id, token, now }: StoreParams<'jobFinishCancelled'>): Promise<boolean> {
  return fencedFinish(ctx, 'finish_cancelled', { state: "'cancelled'", finished_at: '$3' }, [id, token, date(now)]);
}

export async function jobCheckpoint(ctx: PgContext, { id, token, checkpoint }: StoreParams<'jobCheckpoint'>): Promise<boolean> {
  return fenced(ctx, 'checkpoint = $3::json', [id, token, checkpoint]);
}

export async function jobProgress(ctx: PgContext, { id, token, progress }: StoreParams<'jobProgress'>): Promise<boolean> {
  return fenced(ctx, 'progress = $3::jsonb', [id, token, JSON.stringify(progress)]);
}

/** One fenced write: `$1` id, `$2` token, then the SET clause's own parameters. */
async function fenced(ctx: PgContext, set: string, values: unknown[], and = 'TRUE'): Promise<boolean> {
  const rows = await ctx.query(null, `UPDATE :schema.jobs SET ${set} WHERE id = $1 AND lease_token = $2 AND state = 'running' AND ${and} RETURNING id`, values);
  return rows.length === 1;
}

/** One fenced end of a running job, moving it to `jobs_finished`: `$1` id, `$2` token, then `set`'s own parameters. */
async function fencedFinish(ctx: PgContext, name: string, set: Parameters<typeof moveJobs>[0]['set'], values: unknown[], and = 'TRUE'): Promise<boolean> {
  const rows = await ctx.query(name, `WITH ${moveJobs({
    name: 'finished',
    from: 'jobs',
    where: `j.id = $1 AND j.lease_token = $2 AND j.state = 'running' AND ${and}`,
    set: { ...set, ...ENDED_ATTEMPT },
    returning: 'id',
  })} SELECT id FROM finished`, values);
  return rows.length === 1;
}

export async function jobRelease(ctx: PgContext, { leases, now, runAt, cause = 'shutdown' }: StoreParams<'jobRelease'>): Promise<number[]> {
  if (leases.length === 0) return [];
  const values = [leases.map((l) => l.id), leases.map((l) => l.token), date(now), runAt === undefined ? null : date(runAt)];
  return (await ctx.query<{ id: string }>('release', releaseSql(cause), values)).map((r) => Number(r.id));
}

/** jobRelease's statement for `cause` (`$1` ids, `$2` tokens, `$3` now, `$4` runAt or null: the row's own): see {@link handBackSql}. */
function releaseSql(cause: ReleaseCause): string {
  return handBackSql({
    input: 'unnest($1::bigint[], $2::int[]) AS l(id, token)',
    carry: '',
    runAt: 'coalesce($4::timestamptz, j.run_at)',
    timeline: released(cause, 'j.'),
    end: END_ATTEMPT,
  });
}

export async function jobRetry(ctx: PgContext, { id, now, fresh = false }: StoreParams<'jobRetry'>): Promise<{ job: Job; retried: boolean } | null> {
  return ctx.transaction(async (client) => {
    // A job retried (moved back) while this waited for the lock is in jobs by the second read.
    const row = (await client.query<JobRow>(ctx.sql('SELECT * FROM :schema.jobs_finished WHERE id = $1 FOR UPDATE'), [id])).rows[0]
      ?? (await client.query<JobRow>(ctx.sql('SELECT * FROM :schema.jobs WHERE id = $1'), [id])).rows[0];
    if (!row) return null;
    if (row.state !== 'failed' && row.state !== 'cancelled') return { job: rowToJob(row), retried: false };
    if (row.key !== null) {
      const live = await client.query(ctx.sql(`SELECT 1 FROM :schema.jobs WHERE key = $1 AND state IN ('queued','running')`), [row.key]);
      if (live.rows.length > 0) {
        throw new ConflictError(`job ${id} cannot be retried: another job with key "${row.key}" is queued or running`, row.state);
      }
    }
    const updated = (await client.query<JobRow>(ctx.sql(`WITH ${moveJobs({
      name: 'retried',
      from: 'jobs_finished',
      where: 'j.id = $1',
      set: RETRIED,
    })}, ${FRESH_STEPS} SELECT * FROM retried`), [id, date(now), fresh])).rows[0]!;
    return { job: rowToJob(updated), retried: true };
  });
}

/**
 * A promotion (`$1` id, `$2` now) in one statement: the job made due now with its
 * `promoted` event and a NOTIFY `<schema>_jobs` (sent at commit, once per promoted
 * row: the `woken` CTE runs because the answer reads it), else the job as it is.
 */
const PROMOTE = `
  WITH promoted AS (
    UPDATE :schema.jobs j SET run_at = $2, timeline = ${withEvent(`'type', 'promoted', 'at', ${ms('$2::timestamptz')}, 'runAt', ${ms('j.run_at')}`, { row: 'j.', attempt: false })}
    WHERE j.id = $1 AND j.state = 'queued' AND j.run_at > $2 AND j.wait IS NULL RETURNING j.*
  ), woken AS (
    SELECT pg_notify(':channel_jobs', '') FROM promoted
  )
  SELECT true AS promoted, p.* FROM promoted p WHERE EXISTS (SELECT 1 FROM woken)
  UNION ALL SELECT false, a.* FROM :schema.jobs_all a WHERE a.id = $1 AND NOT EXISTS (SELECT 1 FROM promoted)`;

/** Rounds of {@link PROMOTE} before a promotion gives up: each one lost a race with another transaction. */
const PROMOTE_ROUNDS = 100;

export async function jobPromote(ctx: PgContext, { id, now }: StoreParams<'jobPromote'>): Promise<{ job: Job; promoted: boolean } | null> {
  for (let round = 0; round < PROMOTE_ROUNDS; round++) {
    const [row] = await ctx.query<JobRow & { promoted: boolean }>('promote', PROMOTE, [id, date(now)]);
    if (!row) return null;
    const job = rowToJob(row);
    // Read from the statement's snapshot while a concurrent change (a cancel moving it,
    // a claim) made the update skip it: a job that still looks promotable is read again.
    if (!row.promoted && job.state === 'queued' && job.runAt.getTime() > now && job.wait === null) continue;
    return { job, promoted: row.promoted };
  }
  throw new ConflictError(`promotion of job ${id} lost ${PROMOTE_ROUNDS} races with concurrent changes of it; try again`);
}

export async function jobGet(ctx: PgContext, { id }: StoreParams<'jobGet'>): Promise<Job | null> {
  const rows = await ctx.query<JobRow>('get', 'SELECT * FROM :schema.jobs_all WHERE id = $1', [id]);
  return rows[0] ? rowToJob(rows[0]) : null;
}

export async function jobTimeline(ctx: PgContext, { id }: StoreParams<'jobTimeline'>): Promise<JobTimelineRecord | null> {
  const rows = await ctx.query<JobRow>('get', 'SELECT * FROM :schema.jobs_all WHERE id = $1', [id]);
  return rows[0] ? rowToJobTimeline(rows[0]) : null;
}

/**
 * What `jobList` reads of a row: the plain columns, and of each large value its first
 * PREVIEW_CHARS characters and its size in bytes, cut by the server (payload, result and
 * checkpoint are json, whose text is stored as written), so the whole value never
 * crosses the wire.
 */
const SUMMARY = `${JOB_SUMMARY_COLUMNS},
  left(payload::text, ${PREVIEW_CHARS}) AS payload_head, octet_length(payload::text) AS payload_bytes,
  left(result::text, ${PREVIEW_CHARS}) AS result_head, octet_length(result::text) AS result_bytes,
  left(checkpoint::text, ${PREVIEW_CHARS}) AS checkpoint_head, octet_length(checkpoint::text) AS checkpoint_bytes,
  jsonb_array_length(errors) AS error_count, (errors -> -1 ->> 'attempt')::int AS last_error_attempt,
  (errors -> -1 ->> 'time')::float8 AS last_error_time,
  left(errors -> -1 ->> 'message', ${PREVIEW_CHARS}) AS last_error_head, octet_length(errors -> -1 ->> 'message') AS last_error_bytes`;

export async function jobList(ctx: PgContext, p: StoreParams<'jobList'>): Promise<JobSummary[]> {
  const rows = await ctx.query<JobSummaryRow>('list', `
    SELECT ${SUMMARY} FROM :schema.jobs_all
    WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2) AND ($3::text IS NULL OR task = $3)
      AND ($4::bigint IS NULL OR id < $4)
    ORDER BY id DESC LIMIT $5`, [p.state ?? null, p.queue ?? null, p.task ?? null, p.beforeId ?? null, p.limit]);
  return rows.map(rowToJobSummary);
}
