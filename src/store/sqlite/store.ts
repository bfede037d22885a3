import { watch, type FSWatcher } from 'node:fs';
import Database from 'better-sqlite3';
import { ConfigError, ConflictError } from '../../errors.js';
import type { Job, Progress, TransactionClient } from '../../job/types.js';
import type { Migration } from '../migration.js';
import type {
  CancelOutcome,
  CancelRequest,
  Completion,
  InsertedJob,
  JobFilter,
  Lease,
  LeaseAcquireResult,
  LeaseRecord,
  LeaseReport,
  NewJob,
  QueueCount,
  RescueReport,
  ScheduleDefinitionRow,
  ScheduleRecord,
  ServiceRecord,
  Store,
  StoredError,
  ThroughputRow,
  WorkerRecord,
  WorkerRegistration,
} from '../store.js';
import { migrations as sqliteMigrations } from './migrations/index.js';
import { rowToClaimedJob, rowToJob, type JobRow } from './rows.js';
import { rowToSchedule, rowToService, type ScheduleRow, type ServiceRow } from './schedule-rows.js';

/** Options of the SQLite driver. */
export interface SqliteStoreOptions {
  /** How long a statement waits for another process's write lock, in ms. @defaultValue 5000 */
  busyTimeoutMs?: number;
  /** Migrations to apply (tests pass extra ones). @defaultValue the shipped ones */
  migrations?: Migration[];
}

const LEASE_EXPIRED_MESSAGE = 'lease expired: the worker stopped heartbeating (crashed, killed or frozen)';
const CLEAR_LEASE = 'lease_owner = NULL, lease_expires_at = NULL';
const APPEND_ERROR = `errors = json_insert(errors, '$[#]', json(@error))`;

/**
 * The embedded driver: one better-sqlite3 connection to a file in WAL mode with a
 * busy timeout, so several processes on one host can share it. Multi-statement
 * writes run in `BEGIN IMMEDIATE` transactions, single writes are one statement.
 * Synchronous under the hood; methods return promises to match {@link Store}.
 */
export class SqliteStore implements Store {
  readonly driver = 'sqlite';
  readonly supportsListen = false;
  readonly #db: Database.Database;
  readonly #migrations: Migration[];
  readonly #statements = new Map<string, Database.Statement>();

  /**
   * @param filename - path of the database file (created when missing), or ":memory:"
   * @throws StoreError (through the instrumented wrapper) when the file cannot be opened
   */
  constructor(filename: string, options: SqliteStoreOptions = {}) {
    this.#db = new Database(filename, { timeout: options.busyTimeoutMs ?? 5000 });
    this.#migrations = options.migrations ?? sqliteMigrations;
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
  }

  #sql(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) this.#statements.set(sql, (statement = this.#db.prepare(sql)));
    return statement;
  }

  async migrate(): Promise<void> {
    const db = this.#db;
    db.exec(`CREATE TABLE IF NOT EXISTS baton_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking INTEGER NOT NULL DEFAULT 0, applied_at INTEGER NOT NULL)`);
    db.transaction(() => {
      const applied = db.prepare('SELECT version, name, breaking FROM baton_migrations ORDER BY version').all() as Array<{
        version: number;
        name: string;
        breaking: number;
      }>;
      const known = Math.max(0, ...this.#migrations.map((m) => m.version));
      const newer = applied.filter((m) => m.version > known && m.breaking);
      if (newer.length > 0) {
        throw new ConfigError(
          `database schema is at version ${newer.at(-1)!.version} (${newer.at(-1)!.name}), newer than this Baton knows (${known}); upgrade baton`,
        );
      }
      const done = new Set(applied.map((m) => m.version));
      for (const migration of this.#migrations) {
        if (done.has(migration.version)) continue;
        db.exec(migration.sql);
        db.prepare('INSERT INTO baton_migrations (version, name, breaking, applied_at) VALUES (?, ?, ?, ?)').run(
          migration.version,
          migration.name,
          migration.breaking ? 1 : 0,
          Date.now(),
        );
      }
    }).immediate();
  }

  async jobInsertMany({ jobs, now, client }: { jobs: NewJob[]; now: number; client?: TransactionClient }): Promise<InsertedJob[]> {
    if (client) throw new ConfigError('transactional enqueue ({ client }) needs the PostgreSQL driver; on SQLite enqueue without it');
    const findByKey = this.#sql(`SELECT * FROM jobs WHERE key = ? AND state IN ('queued','running')`);
    const insert = this.#sql(`INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at)
      VALUES (@queue, @task, @payload, 'queued', @priority, @runAt, @maxAttempts, @timeoutMs, @key, @now) RETURNING *`);
    // Runs of jobs without a key go in as one INSERT … SELECT FROM json_each (about 2.5×
    // faster than a statement per row); keyed jobs one at a time, after the key lookup.
    const bulk = this.#sql(`INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at)
      SELECT value->>0, value->>1, value->>2, 'queued', value->>3, value->>4, value->>5, value->>6, NULL, ? FROM json_each(?)
      RETURNING *`);
    const insertRun = (run: NewJob[]): InsertedJob[] =>
      (bulk.all(now, JSON.stringify(run.map((j) => [j.queue, j.task, j.payload, j.priority, j.runAt, j.maxAttempts, j.timeoutMs]))) as JobRow[])
        .sort((a, b) => a.id - b.id)
        .map((row) => ({ job: rowToJob(row), created: true }));
    return this.#db
      .transaction(() => {
        const out: InsertedJob[] = [];
        let run: NewJob[] = [];
        for (const job of jobs) {
          if (job.key === null) {
            run.push(job);
            continue;
          }
          if (run.length > 0) out.push(...insertRun(run));
          run = [];
          const existing = findByKey.get(job.key) as JobRow | undefined;
          out.push(existing ? { job: rowToJob(existing), created: false } : { job: rowToJob(insert.get({ ...job, now }) as JobRow), created: true });
        }
        if (run.length > 0) out.push(...insertRun(run));
        return out;
      })
      .immediate();
  }

  async jobClaim(params: { workerId: string; tasks: string[]; queues: string[]; limit: number; leaseMs: number; now: number }) {
    const rows = this.#sql(`UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = @workerId,
        lease_expires_at = @expires, lease_token = lease_token + 1, started_at = @now
      WHERE id IN (
        SELECT id FROM jobs INDEXED BY jobs_claim
        WHERE state = 'queued' AND run_at <= @now
          AND queue IN (SELECT value FROM json_each(@queues)) AND task IN (SELECT value FROM json_each(@tasks))
        ORDER BY priority, run_at, id LIMIT @limit)
      RETURNING *`).all({
      workerId: params.workerId,
      expires: params.now + params.leaseMs,
      now: params.now,
      queues: JSON.stringify(params.queues),
      tasks: JSON.stringify(params.tasks),
      limit: params.limit,
    }) as JobRow[];
    return rows
      .sort((a, b) => a.priority - b.priority || a.run_at - b.run_at || a.id - b.id)
      .map(rowToClaimedJob);
  }

  async jobCompleteMany({ items, now }: { items: Completion[]; now: number }): Promise<number[]> {
    if (items.length === 0) return [];
    const rows = this.#sql(`UPDATE jobs SET state = 'completed', result = json_extract(value, '$[2]'), finished_at = @now, ${CLEAR_LEASE}
      FROM json_each(@items)
      WHERE jobs.id = json_extract(value, '$[0]') AND jobs.lease_token = json_extract(value, '$[1]') AND jobs.state = 'running'
      RETURNING id`).all({ now, items: JSON.stringify(items.map((i) => [i.id, i.token, i.result])) }) as Array<{ id: number }>;
    return rows.map((r) => r.id);
  }

  async jobFail({ id, token, error, retryAt, now }: { id: number; token: number; error: StoredError; retryAt: number | null; now: number }) {
    const set =
      retryAt === null
        ? `state = 'failed', finished_at = @now, ${APPEND_ERROR}, ${CLEAR_LEASE}`
        : `state = 'queued', run_at = @retryAt, ${APPEND_ERROR}, ${CLEAR_LEASE}`;
    return this.#fenced(set, { id, token, now, retryAt, error: JSON.stringify(error) });
  }

  async jobFinishCancelled({ id, token, now }: { id: number; token: number; now: number }) {
    return this.#fenced(`state = 'cancelled', finished_at = @now, ${CLEAR_LEASE}`, { id, token, now });
  }

  async jobCheckpoint({ id, token, checkpoint }: { id: number; token: number; checkpoint: string }) {
    return this.#fenced('checkpoint = @checkpoint', { id, token, checkpoint });
  }

  async jobProgress({ id, token, progress }: { id: number; token: number; progress: Progress }) {
    return this.#fenced('progress = @progress', { id, token, progress: JSON.stringify(progress) });
  }

  #fenced(set: string, params: Record<string, unknown>): boolean {
    return this.#sql(`UPDATE jobs SET ${set} WHERE id = @id AND lease_token = @token AND state = 'running'`).run(params).changes === 1;
  }

  async jobRelease({ leases, now }: { leases: Lease[]; now: number }): Promise<number[]> {
    if (leases.length === 0) return [];
    const rows = this.#sql(`UPDATE jobs SET
        state = CASE WHEN cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
        finished_at = CASE WHEN cancel_requested_at IS NULL THEN NULL ELSE @now END,
        run_at = @now, attempt = attempt - 1, ${CLEAR_LEASE}
      WHERE state = 'running' AND (id, lease_token) IN
        (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(@leases))
      RETURNING id`).all({ now, leases: JSON.stringify(leases.map((l) => [l.id, l.token])) }) as Array<{ id: number }>;
    return rows.map((r) => r.id);
  }

  async leaseExtendMany({ owner, leases, leaseMs, now }: { owner: string; leases: Lease[]; leaseMs: number; now: number }): Promise<LeaseReport> {
    if (leases.length === 0) return { lost: [], cancelRequested: [] };
    const rows = this.#sql(`UPDATE jobs SET lease_expires_at = @expires
      WHERE state = 'running' AND lease_owner = @owner AND (id, lease_token) IN
        (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(@leases))
      RETURNING id, cancel_requested_at, cancel_reason`).all({
      owner,
      expires: now + leaseMs,
      leases: JSON.stringify(leases.map((l) => [l.id, l.token])),
    }) as Array<{ id: number; cancel_requested_at: number | null; cancel_reason: string | null }>;
    const held = new Set(rows.map((r) => r.id));
    return {
      lost: leases.filter((l) => !held.has(l.id)).map((l) => l.id),
      cancelRequested: rows.filter((r) => r.cancel_requested_at !== null).map((r) => ({ id: r.id, reason: r.cancel_reason })),
    };
  }

  async jobCancelRequests({ ids }: { ids: number[] }): Promise<CancelRequest[]> {
    if (ids.length === 0) return [];
    return this.#sql(`SELECT id, cancel_reason AS reason FROM jobs
      WHERE id IN (SELECT value FROM json_each(?)) AND state = 'running' AND cancel_requested_at IS NOT NULL`).all(
      JSON.stringify(ids),
    ) as CancelRequest[];
  }

  async jobRescueExpired({ now }: { now: number }): Promise<RescueReport> {
    const any = this.#sql(`SELECT 1 FROM jobs INDEXED BY jobs_lease WHERE state = 'running' AND lease_expires_at < ? LIMIT 1`).get(now);
    if (!any) return { requeued: [], failed: [], cancelled: [] };
    const expired = `state = 'running' AND lease_expires_at < @now`;
    const error = `json_object('attempt', attempt, 'time', @now, 'message', '${LEASE_EXPIRED_MESSAGE}', 'stack', NULL)`;
    const ids = (sql: string) => (this.#sql(sql).all({ now }) as Array<{ id: number }>).map((r) => r.id);
    return this.#db
      .transaction(() => ({
        cancelled: ids(`UPDATE jobs SET state = 'cancelled', finished_at = @now, ${CLEAR_LEASE}
          WHERE ${expired} AND cancel_requested_at IS NOT NULL RETURNING id`),
        failed: ids(`UPDATE jobs SET state = 'failed', finished_at = @now, errors = json_insert(errors, '$[#]', ${error}), ${CLEAR_LEASE}
          WHERE ${expired} AND attempt >= max_attempts RETURNING id`),
        requeued: ids(`UPDATE jobs SET state = 'queued', run_at = @now, errors = json_insert(errors, '$[#]', ${error}), ${CLEAR_LEASE}
          WHERE ${expired} RETURNING id`),
      }))
      .immediate();
  }

  async jobCancel({ id, reason, now }: { id: number; reason: string | null; now: number }) {
    return this.#db
      .transaction(() => {
        const row = this.#sql('SELECT state FROM jobs WHERE id = ?').get(id) as { state: string } | undefined;
        if (!row) return null;
        let outcome: CancelOutcome = 'unchanged';
        if (row.state === 'queued') {
          this.#sql(`UPDATE jobs SET state = 'cancelled', cancel_requested_at = @now, cancel_reason = @reason, finished_at = @now
            WHERE id = @id`).run({ id, now, reason });
          outcome = 'cancelled';
        } else if (row.state === 'running') {
          this.#sql(`UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, @now),
            cancel_reason = coalesce(cancel_reason, @reason) WHERE id = @id`).run({ id, now, reason });
          outcome = 'requested';
        }
        return { job: rowToJob(this.#sql('SELECT * FROM jobs WHERE id = ?').get(id) as JobRow), outcome };
      })
      .immediate();
  }

  async jobRetry({ id, now }: { id: number; now: number }) {
    return this.#db
      .transaction(() => {
        const row = this.#sql('SELECT * FROM jobs WHERE id = ?').get(id) as JobRow | undefined;
        if (!row) return null;
        if (row.state !== 'failed' && row.state !== 'cancelled') return { job: rowToJob(row), retried: false };
        if (row.key !== null && this.#sql(`SELECT 1 FROM jobs WHERE key = ? AND state IN ('queued','running')`).get(row.key)) {
          throw new ConflictError(`job ${id} cannot be retried: another job with key "${row.key}" is queued or running`, row.state);
        }
        const updated = this.#sql(`UPDATE jobs SET state = 'queued', run_at = @now, attempt = 0, result = NULL,
            cancel_requested_at = NULL, cancel_reason = NULL, finished_at = NULL, ${CLEAR_LEASE}
          WHERE id = @id RETURNING *`).get({ id, now }) as JobRow;
        return { job: rowToJob(updated), retried: true };
      })
      .immediate();
  }

  async jobGet({ id }: { id: number }) {
    const row = this.#sql('SELECT * FROM jobs WHERE id = ?').get(id) as JobRow | undefined;
    return row ? rowToJob(row) : null;
  }

  async jobList(params: JobFilter & { limit: number; beforeId?: number }) {
    const where = ['1 = 1'];
    if (params.state) where.push('state = @state');
    if (params.queue) where.push('queue = @queue');
    if (params.task) where.push('task = @task');
    if (params.beforeId !== undefined) where.push('id < @beforeId');
    const rows = this.#sql(`SELECT * FROM jobs WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT @limit`).all({
      state: params.state ?? null,
      queue: params.queue ?? null,
      task: params.task ?? null,
      beforeId: params.beforeId ?? null,
      limit: params.limit,
    }) as JobRow[];
    return rows.map(rowToJob);
  }

  async queueCounts({ queuePrefix }: { queuePrefix?: string }): Promise<QueueCount[]> {
    return this.#sql(`SELECT queue, state, count(*) AS count FROM jobs
      WHERE @prefix IS NULL OR substr(queue, 1, length(@prefix)) = @prefix
      GROUP BY queue, state ORDER BY queue, state`).all({ prefix: queuePrefix ?? null }) as QueueCount[];
  }

  async leaseAcquire({ name, owner, ttlMs, now }: { name: string; owner: string; ttlMs: number; now: number }): Promise<LeaseAcquireResult> {
    return this.#db
      .transaction((): LeaseAcquireResult => {
        const row = this.#sql(`INSERT INTO leases (name, owner, token, expires_at) VALUES (@name, @owner, 1, @expires)
          ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = leases.token + 1, expires_at = excluded.expires_at
            WHERE leases.owner IS NULL OR leases.expires_at <= @now
          RETURNING token, expires_at`).get({ name, owner, expires: now + ttlMs, now }) as { token: number; expires_at: number } | undefined;
        if (row) return { acquired: true, token: row.token, expiresAt: row.expires_at };
        const held = this.#sql('SELECT owner, expires_at FROM leases WHERE name = ?').get(name) as { owner: string; expires_at: number };
        return { acquired: false, owner: held.owner, expiresAt: held.expires_at };
      })
      .immediate();
  }

  async leaseRenew({ name, owner, token, ttlMs, now }: { name: string; owner: string; token: number; ttlMs: number; now: number }) {
    return this.#sql('UPDATE leases SET expires_at = @expires WHERE name = @name AND owner = @owner AND token = @token').run({
      name,
      owner,
      token,
      expires: now + ttlMs,
    }).changes === 1;
  }

  async leaseRelease({ name, owner, token }: { name: string; owner: string; token: number }) {
    return this.#sql('UPDATE leases SET owner = NULL, expires_at = NULL WHERE name = @name AND owner = @owner AND token = @token').run({
      name,
      owner,
      token,
    }).changes === 1;
  }

  async leaseGet({ name }: { name: string }): Promise<LeaseRecord | null> {
    const row = this.#sql('SELECT name, owner, token, expires_at FROM leases WHERE name = ?').get(name) as
      | { name: string; owner: string | null; token: number; expires_at: number | null }
      | undefined;
    return row ? { name: row.name, owner: row.owner, token: row.token, expiresAt: row.expires_at } : null;
  }

  async serviceEnsure({ name, now }: { name: string; now: number }): Promise<ServiceRecord> {
    this.#sql('INSERT INTO services (name, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING').run(name, now, now);
    return (await this.serviceGet({ name }))!;
  }

  async serviceGet({ name }: { name: string }): Promise<ServiceRecord | null> {
    const row = this.#sql(`SELECT s.*, l.owner AS holder, l.expires_at AS holder_until FROM services s
      LEFT JOIN leases l ON l.name = 'service:' || s.name WHERE s.name = ?`).get(name) as ServiceRow | undefined;
    return row ? rowToService(row) : null;
  }

  async serviceList({ now }: { now: number }): Promise<ServiceRecord[]> {
    const rows = this.#sql(`SELECT s.*, CASE WHEN l.expires_at > @now THEN l.owner END AS holder,
        CASE WHEN l.expires_at > @now THEN l.expires_at END AS holder_until
      FROM services s LEFT JOIN leases l ON l.name = 'service:' || s.name ORDER BY s.name`).all({ now }) as ServiceRow[];
    return rows.map(rowToService);
  }

  async serviceRecord(p: { name: string; leaseName: string; token: number; lastRunAt: number; nextRunAt: number | null; error: string | null; now: number }) {
    return this.#sql(`UPDATE services SET
        last_run_at = CASE WHEN @error IS NULL THEN @lastRunAt ELSE last_run_at END,
        next_run_at = @nextRunAt,
        last_error = coalesce(@error, last_error),
        last_error_at = CASE WHEN @error IS NULL THEN last_error_at ELSE @now END,
        failures = CASE WHEN @error IS NULL THEN 0 ELSE failures + 1 END,
        updated_at = @now
      WHERE name = @name AND EXISTS (SELECT 1 FROM leases WHERE name = @leaseName AND token = @token AND owner IS NOT NULL)`).run(p).changes === 1;
  }

  async serviceSetPaused({ name, paused, now }: { name: string; paused: boolean; now: number }) {
    return this.#sql('UPDATE services SET paused = ?, updated_at = ? WHERE name = ?').run(paused ? 1 : 0, now, name).changes === 1;
  }

  async serviceTrigger({ name, now }: { name: string; now: number }) {
    return this.#sql('UPDATE services SET next_run_at = @now, updated_at = @now WHERE name = @name').run({ name, now }).changes === 1;
  }

  async scheduleUpsert({ schedule, nextRunAt, now }: { schedule: ScheduleDefinitionRow; nextRunAt: number | null; now: number }) {
    return this.#db
      .transaction(() => {
        const existed = this.#sql('SELECT 1 FROM schedules WHERE name = ?').get(schedule.name) !== undefined;
        const row = this.#sql(`INSERT INTO schedules (name, cron, every_ms, timezone, task, payload, queue, priority, max_attempts, timeout_ms,
            catch_up, catch_up_limit, next_run_at, created_at, updated_at)
          VALUES (@name, @cron, @everyMs, @timezone, @task, @payload, @queue, @priority, @maxAttempts, @timeoutMs,
            @catchUp, @catchUpLimit, @nextRunAt, @now, @now)
          ON CONFLICT (name) DO UPDATE SET
            next_run_at = CASE WHEN schedules.cron IS excluded.cron AND schedules.every_ms IS excluded.every_ms
              AND schedules.timezone = excluded.timezone THEN schedules.next_run_at ELSE excluded.next_run_at END,
            cron = excluded.cron, every_ms = excluded.every_ms, timezone = excluded.timezone, task = excluded.task,
            payload = excluded.payload, queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
            timeout_ms = excluded.timeout_ms, catch_up = excluded.catch_up, catch_up_limit = excluded.catch_up_limit,
            updated_at = excluded.updated_at
          RETURNING *`).get({ ...schedule, nextRunAt, now }) as ScheduleRow;
        return { schedule: rowToSchedule(row), created: !existed };
      })
      .immediate();
  }

  async scheduleGet({ name }: { name: string }): Promise<ScheduleRecord | null> {
    const row = this.#sql('SELECT * FROM schedules WHERE name = ?').get(name) as ScheduleRow | undefined;
    return row ? rowToSchedule(row) : null;
  }

  async scheduleList(_params: { now?: number }): Promise<ScheduleRecord[]> {
    return (this.#sql('SELECT * FROM schedules ORDER BY name').all() as ScheduleRow[]).map(rowToSchedule);
  }

  async scheduleDue({ now, limit }: { now: number; limit: number }) {
    const due = (this.#sql('SELECT * FROM schedules WHERE paused = 0 AND next_run_at <= ? ORDER BY next_run_at, name LIMIT ?').all(now, limit) as ScheduleRow[]).map(
      rowToSchedule,
    );
    const earliest = (this.#sql('SELECT min(next_run_at) AS t FROM schedules WHERE paused = 0').get() as { t: number | null }).t;
    return { due, earliest };
  }

  async scheduleAdvance(p: Parameters<Store['scheduleAdvance']>[0]): Promise<{ advanced: boolean; jobs: Job[] }> {
    const insert = this.#sql(`INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at, schedule_name, scheduled_for)
      VALUES (@queue, @task, @payload, 'queued', @priority, @runAt, @maxAttempts, @timeoutMs, @key, @now, @scheduleName, @scheduledFor)
      ON CONFLICT DO NOTHING RETURNING *`);
    return this.#db
      .transaction(() => {
        const lastTick = p.jobs.length > 0 ? Math.max(...p.jobs.map((j) => j.scheduledFor)) : null;
        const moved = this.#sql(`UPDATE schedules SET next_run_at = @nextRunAt, last_run_at = coalesce(@lastTick, last_run_at),
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
        const jobs: Job[] = [];
        for (const job of p.jobs) {
          const row = insert.get({ ...job, now: p.now, scheduleName: p.name }) as JobRow | undefined;
          if (row) jobs.push(rowToJob(row));
        }
        return { advanced: true, jobs };
      })
      .immediate();
  }

  async scheduleTrigger({ name, now }: { name: string; now: number }): Promise<Job | null> {
    const row = this.#sql(`INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, created_at, schedule_name)
      SELECT queue, task, payload, 'queued', priority, @now, max_attempts, timeout_ms, @now, name FROM schedules WHERE name = @name
      RETURNING *`).get({ name, now }) as JobRow | undefined;
    return row ? rowToJob(row) : null;
  }

  async scheduleSetPaused({ name, paused, nextRunAt, now }: { name: string; paused: boolean; nextRunAt: number | null; now: number }) {
    const sql = paused
      ? 'UPDATE schedules SET paused = 1, updated_at = @now WHERE name = @name'
      : 'UPDATE schedules SET paused = 0, next_run_at = @nextRunAt, updated_at = @now WHERE name = @name';
    return this.#sql(sql).run(paused ? { name, now } : { name, now, nextRunAt }).changes === 1;
  }

  async scheduleRemove({ name }: { name: string }) {
    return this.#sql('DELETE FROM schedules WHERE name = ?').run(name).changes === 1;
  }

  async workerUpsert({ worker, ttlMs, now }: { worker: WorkerRegistration; ttlMs: number; now: number }): Promise<void> {
    this.#sql(`INSERT INTO workers (id, host, pid, started_at, last_heartbeat_at, expires_at, concurrency, queues, running)
      VALUES (@id, @host, @pid, @startedAt, @now, @expires, @concurrency, @queues, @running)
      ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, expires_at = excluded.expires_at,
        concurrency = excluded.concurrency, queues = excluded.queues, running = excluded.running`).run({
      ...worker,
      now,
      expires: now + ttlMs,
      queues: JSON.stringify(worker.queues),
      running: JSON.stringify(worker.running),
    });
  }

  async workerDelete({ id }: { id: string }): Promise<boolean> {
    return this.#sql('DELETE FROM workers WHERE id = ?').run(id).changes === 1;
  }

  async workerList({ now }: { now: number }): Promise<WorkerRecord[]> {
    const rows = this.#sql('SELECT * FROM workers WHERE expires_at > ? ORDER BY id').all(now) as Array<{
      id: string;
      host: string;
      pid: number;
      started_at: number;
      last_heartbeat_at: number;
      expires_at: number;
      concurrency: number;
      queues: string;
      running: string;
    }>;
    return rows.map((r) => ({
      id: r.id,
      host: r.host,
      pid: r.pid,
      startedAt: r.started_at,
      lastHeartbeatAt: r.last_heartbeat_at,
      expiresAt: r.expires_at,
      concurrency: r.concurrency,
      queues: JSON.parse(r.queues) as string[],
      running: JSON.parse(r.running) as number[],
    }));
  }

  async queueThroughput({ since }: { since: number }): Promise<ThroughputRow[]> {
    return this.#sql(`SELECT queue, (finished_at / 60000) * 60000 AS minute,
        sum(state = 'completed') AS completed, sum(state = 'failed') AS failed
      FROM jobs WHERE finished_at >= ? AND state IN ('completed', 'failed')
      GROUP BY queue, minute ORDER BY minute, queue`).all(since) as ThroughputRow[];
  }

  /**
   * Sees other connections' commits two ways: an `fs.watch` (inotify) on the WAL file,
   * which fires within a millisecond of another process's write, and a poll every
   * `intervalMs` as the safety net (network file systems, platforms without events).
   * Either way `PRAGMA data_version` decides whether anything changed, so this
   * connection's own writes wake nobody.
   */
  watchChanges({ intervalMs, listener }: { intervalMs: number; listener: () => void }): () => void {
    const version = () => this.#db.pragma('data_version', { simple: true }) as number;
    let last = version();
    let scheduled = false;
    const check = () => {
      scheduled = false;
      if (!this.#db.open) return;
      let current: number;
      try {
        current = version();
      } catch {
        return; // busy or closing: the next tick looks again
      }
      if (current !== last) {
        last = current;
        listener();
      }
    };
    const timer = setInterval(check, intervalMs);
    timer.unref();
    let watcher: FSWatcher | undefined;
    if (!this.#db.memory) {
      try {
        watcher = watch(`${this.#db.name}-wal`, { persistent: false }, () => {
          if (scheduled) return;
          scheduled = true;
          setImmediate(check);
        });
        watcher.on('error', () => watcher?.close()); // the poll goes on alone
      } catch {
        watcher = undefined; // no WAL file to watch (yet): the poll serves
      }
    }
    return () => {
      clearInterval(timer);
      watcher?.close();
    };
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}
