import pg from 'pg';
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
  StoreChange,
  StoredError,
  ThroughputRow,
  WorkerRecord,
  WorkerRegistration,
} from '../store.js';
import { migrations as postgresMigrations } from './migrations/index.js';
import { PgListener } from './listener.js';
import { pgRowToClaimedJob, pgRowToJob, type PgJobRow } from './rows.js';
import { pgRowToSchedule, pgRowToService, type PgScheduleRow, type PgServiceRow } from './schedule-rows.js';

/** Options of the PostgreSQL driver. */
export interface PostgresStoreOptions {
  /** Schema holding Baton's tables (created when missing). @defaultValue 'baton' */
  schema?: string;
  /** Pool size (connections) for enqueues and other durable writes and reads. @defaultValue 10 */
  poolSize?: number;
  /** Pool size for claims, completions and lease renewals. @defaultValue 4 */
  hotPoolSize?: number;
  /** Migrations to apply (tests pass extra ones). @defaultValue the shipped ones */
  migrations?: Migration[];
  /** Called with errors of idle pool connections and of the LISTEN connection (they never throw). */
  onError?: (error: unknown, where: string) => void;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const LEASE_EXPIRED_MESSAGE = 'lease expired: the worker stopped heartbeating (crashed, killed or frozen)';
const CLEAR_LEASE = 'lease_owner = NULL, lease_expires_at = NULL';
const date = (ms: number) => new Date(ms);

/**
 * The fleet driver: node-postgres with a pool. Claims use `FOR UPDATE SKIP LOCKED`
 * in one statement; completions, lease extensions and releases are one statement
 * per batch (unnest of arrays), every write about a running job fenced by its lease
 * token. Wake-ups and cancel requests arrive by LISTEN/NOTIFY (triggers send them
 * at commit) on a dedicated connection, with the workers' polling as the safety net.
 * Times are timestamptz; `now` comes from the caller's clock (keep hosts in NTP sync).
 */
export class PostgresStore implements Store {
  readonly driver = 'postgres';
  readonly supportsListen = true;
  readonly schema: string;
  readonly #pool: pg.Pool;
  /** Connections for the hot path: claims, completions, lease renewals (see constructor). */
  readonly #hotPool: pg.Pool;
  readonly #connectionString: string;
  readonly #migrations: Migration[];
  readonly #q: string;
  readonly #onError: (error: unknown, where: string) => void;
  readonly #listeners = new Set<PgListener>();
  readonly #texts = new Map<string, string>();

  /** @throws ConfigError for an invalid schema name */
  constructor(connectionString: string, options: PostgresStoreOptions = {}) {
    const schema = options.schema ?? 'baton';
    if (!SCHEMA_NAME.test(schema)) {
      throw new ConfigError(`schema name ${JSON.stringify(schema)} is invalid: use lowercase letters, digits and _ (at most 63)`);
    }
    this.schema = schema;
    this.#q = `"${schema}"`;
    this.#connectionString = connectionString;
    this.#migrations = options.migrations ?? postgresMigrations;
    this.#onError = options.onError ?? (() => undefined);
    this.#pool = new pg.Pool({ connectionString, max: options.poolSize ?? 10, application_name: 'baton' });
    // Claims, completions and lease renewals commit without waiting for the WAL flush
    // (synchronous_commit off): a crash of the database server itself may forget the
    // last few milliseconds of them, and those jobs simply run again (at-least-once,
    // as after any crash). Enqueues, failures, cancels and checkpoints stay durable.
    this.#hotPool = new pg.Pool({ connectionString, max: options.hotPoolSize ?? 4, application_name: 'baton', options: '-c synchronous_commit=off' });
    // An idle client's error (server restart, network drop) is emitted on the pool;
    // without a listener Node would crash the process.
    this.#pool.on('error', (error) => this.#onError(error, 'pool'));
    this.#hotPool.on('error', (error) => this.#onError(error, 'pool'));
  }

  /** SQL with `:schema` / `:channel` filled in. */
  #sql(text: string): string {
    let sql = this.#texts.get(text);
    if (sql === undefined) this.#texts.set(text, (sql = text.replaceAll(':schema', this.#q).replaceAll(':channel', this.schema)));
    return sql;
  }

  async #query<R extends pg.QueryResultRow>(name: string | null, text: string, values: unknown[] = [], pool = this.#pool): Promise<R[]> {
    const config: pg.QueryConfig = { text: this.#sql(text), values };
    if (name) config.name = `baton_${this.schema}_${name}`;
    return (await pool.query<R>(config)).rows;
  }

  async #transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const value = await fn(client);
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async migrate(): Promise<void> {
    const q = this.#q;
    await this.#transaction(async (client) => {
      // One migrator at a time across every process and host.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`baton.migrate.${this.schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${q}.baton_migrations (
        version integer PRIMARY KEY, name text NOT NULL, breaking boolean NOT NULL DEFAULT false, applied_at timestamptz NOT NULL DEFAULT now())`);
      const applied = (await client.query<{ version: number; name: string; breaking: boolean }>(
        `SELECT version, name, breaking FROM ${q}.baton_migrations ORDER BY version`,
      )).rows;
      const known = Math.max(0, ...this.#migrations.map((m) => m.version));
      const newer = applied.filter((m) => m.version > known && m.breaking);
      if (newer.length > 0) {
        throw new ConfigError(
          `database schema ${this.schema} is at version ${newer.at(-1)!.version} (${newer.at(-1)!.name}), newer than this Baton knows (${known}); upgrade baton`,
        );
      }
      const done = new Set(applied.map((m) => m.version));
      for (const migration of this.#migrations) {
        if (done.has(migration.version)) continue;
        await client.query(this.#sql(migration.sql));
        await client.query(`INSERT INTO ${q}.baton_migrations (version, name, breaking) VALUES ($1, $2, $3)`, [
          migration.version,
          migration.name,
          migration.breaking ?? false,
        ]);
      }
    });
  }

  async jobInsertMany({ jobs, now, client }: { jobs: NewJob[]; now: number; client?: TransactionClient }): Promise<InsertedJob[]> {
    const run = async (db: TransactionClient) => {
      const results: Array<InsertedJob | undefined> = new Array(jobs.length);
      let pending = jobs.map((job, index) => ({ job, index }));
      // A key can be freed (its job finished) between the conflict and the read: try again.
      for (let round = 0; pending.length > 0; round++) {
        if (round === 5) throw new ConflictError('could not settle keyed enqueue after 5 rounds of concurrent changes');
        const inserted = (await db.query(this.#sql(`
          WITH input AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[], $7::int[], $8::text[], $9::int[])
              AS t(queue, task, payload, priority, run_at, max_attempts, timeout_ms, key, ord)
          ), ins AS (
            INSERT INTO :schema.jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at)
            SELECT queue, task, payload::json, 'queued', priority, run_at, max_attempts, timeout_ms, key, $10 FROM input ORDER BY ord
            ON CONFLICT (key) WHERE key IS NOT NULL AND state IN ('queued','running') DO NOTHING
            RETURNING *
          )
          SELECT * FROM ins ORDER BY id`), [
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
        ])).rows as PgJobRow[];
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
        created.forEach((p, i) => (results[p.index] = { job: pgRowToJob(inserted[i]!), created: true }));
        if (skipped.length === 0) break;
        const live = (await db.query(
          this.#sql(`SELECT * FROM :schema.jobs WHERE key = ANY($1::text[]) AND state IN ('queued','running')`),
          [[...new Set(skipped.map((p) => p.job.key!))]],
        )).rows as PgJobRow[];
        const byKey = new Map(live.map((r) => [r.key!, r]));
        pending = [];
        for (const p of skipped) {
          const row = byKey.get(p.job.key!);
          if (row) results[p.index] = { job: pgRowToJob(row), created: false };
          else pending.push(p);
        }
      }
      return results as InsertedJob[];
    };
    if (client) return run(client);
    return this.#transaction(run);
  }

  async jobClaim(params: { workerId: string; tasks: string[]; queues: string[]; limit: number; leaseMs: number; now: number }) {
    const rows = await this.#query<PgJobRow>('claim', `
      WITH next AS (
        -- Per queue, an ordered scan of the (queue, priority, run_at, id) index that stops
        -- after $4 rows, whatever the (often stale) statistics of a churning queue table
        -- say; then the best $4 across the queues.
        SELECT c.id FROM unnest($2::text[]) AS q(name) CROSS JOIN LATERAL (
          SELECT id, priority, run_at FROM :schema.jobs
          WHERE state = 'queued' AND queue = q.name AND run_at <= $1 AND task = ANY($3::text[])
          ORDER BY priority, run_at, id
          LIMIT $4
          FOR UPDATE SKIP LOCKED
        ) c
        ORDER BY c.priority, c.run_at, c.id
        LIMIT $4
      )
      UPDATE :schema.jobs j SET state = 'running', attempt = j.attempt + 1, lease_owner = $5, lease_expires_at = $6,
        lease_token = j.lease_token + 1, started_at = $1
      WHERE j.id = ANY(ARRAY(SELECT id FROM next)) -- primary-key lookups even in a generic plan
      RETURNING j.*`, [date(params.now), params.queues, params.tasks, params.limit, params.workerId, date(params.now + params.leaseMs)], this.#hotPool);
    return rows
      .map(pgRowToClaimedJob)
      .sort((a, b) => a.priority - b.priority || a.runAt.getTime() - b.runAt.getTime() || a.id - b.id);
  }

  async jobCompleteMany({ items, now }: { items: Completion[]; now: number }): Promise<number[]> {
    if (items.length === 0) return [];
    const rows = await this.#query<{ id: string }>('complete_many', `
      UPDATE :schema.jobs j SET state = 'completed', result = c.result::json, finished_at = $4, ${CLEAR_LEASE}
      FROM unnest($1::bigint[], $2::int[], $3::text[]) AS c(id, token, result)
      WHERE j.id = c.id AND j.lease_token = c.token AND j.state = 'running'
      RETURNING j.id`, [items.map((i) => i.id), items.map((i) => i.token), items.map((i) => i.result), date(now)], this.#hotPool);
    return rows.map((r) => Number(r.id));
  }

  async jobFail({ id, token, error, retryAt, now }: { id: number; token: number; error: StoredError; retryAt: number | null; now: number }) {
    // $3: finished_at when failed for good, run_at of the retry otherwise.
    const set =
      retryAt === null
        ? `state = 'failed', finished_at = $3::timestamptz, errors = errors || jsonb_build_array($4::jsonb), ${CLEAR_LEASE}`
        : `state = 'queued', run_at = $3::timestamptz, errors = errors || jsonb_build_array($4::jsonb), ${CLEAR_LEASE}`;
    return this.#fenced(set, [id, token, date(retryAt ?? now), JSON.stringify(error)]);
  }

  async jobFinishCancelled({ id, token, now }: { id: number; token: number; now: number }) {
    return this.#fenced(`state = 'cancelled', finished_at = $3, ${CLEAR_LEASE}`, [id, token, date(now)]);
  }

  async jobCheckpoint({ id, token, checkpoint }: { id: number; token: number; checkpoint: string }) {
    return this.#fenced('checkpoint = $3::json', [id, token, checkpoint]);
  }

  async jobProgress({ id, token, progress }: { id: number; token: number; progress: Progress }) {
    return this.#fenced('progress = $3::jsonb', [id, token, JSON.stringify(progress)]);
  }

  /** `$1` id, `$2` token, then the SET clause's own parameters. */
  async #fenced(set: string, values: unknown[]): Promise<boolean> {
    const rows = await this.#query(null, `UPDATE :schema.jobs SET ${set} WHERE id = $1 AND lease_token = $2 AND state = 'running' RETURNING id`, values);
    return rows.length === 1;
  }

  async jobRelease({ leases, now }: { leases: Lease[]; now: number }): Promise<number[]> {
    if (leases.length === 0) return [];
    const rows = await this.#query<{ id: string }>('release', `
      UPDATE :schema.jobs j SET
        state = CASE WHEN j.cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
        finished_at = CASE WHEN j.cancel_requested_at IS NULL THEN NULL ELSE $3::timestamptz END,
        run_at = $3::timestamptz, attempt = j.attempt - 1, ${CLEAR_LEASE}
      FROM unnest($1::bigint[], $2::int[]) AS l(id, token)
      WHERE j.id = l.id AND j.lease_token = l.token AND j.state = 'running'
      RETURNING j.id`, [leases.map((l) => l.id), leases.map((l) => l.token), date(now)]);
    return rows.map((r) => Number(r.id));
  }

  async leaseExtendMany({ owner, leases, leaseMs, now }: { owner: string; leases: Lease[]; leaseMs: number; now: number }): Promise<LeaseReport> {
    if (leases.length === 0) return { lost: [], cancelRequested: [] };
    const rows = await this.#query<{ id: string; cancel_requested_at: Date | null; cancel_reason: string | null }>('extend', `
      UPDATE :schema.jobs j SET lease_expires_at = $4
      FROM unnest($1::bigint[], $2::int[]) AS l(id, token)
      WHERE j.id = l.id AND j.lease_token = l.token AND j.state = 'running' AND j.lease_owner = $3
      RETURNING j.id, j.cancel_requested_at, j.cancel_reason`, [leases.map((l) => l.id), leases.map((l) => l.token), owner, date(now + leaseMs)], this.#hotPool);
    const held = new Set(rows.map((r) => Number(r.id)));
    return {
      lost: leases.filter((l) => !held.has(l.id)).map((l) => l.id),
      cancelRequested: rows.filter((r) => r.cancel_requested_at !== null).map((r) => ({ id: Number(r.id), reason: r.cancel_reason })),
    };
  }

  async jobCancelRequests({ ids }: { ids: number[] }): Promise<CancelRequest[]> {
    if (ids.length === 0) return [];
    const rows = await this.#query<{ id: string; reason: string | null }>('cancel_requests', `
      SELECT id, cancel_reason AS reason FROM :schema.jobs
      WHERE id = ANY($1::bigint[]) AND state = 'running' AND cancel_requested_at IS NOT NULL`, [ids]);
    return rows.map((r) => ({ id: Number(r.id), reason: r.reason }));
  }

  async jobRescueExpired({ now }: { now: number }): Promise<RescueReport> {
    const rows = await this.#query<{ id: string; state: string }>('rescue', `
      WITH expired AS (
        SELECT id FROM :schema.jobs WHERE state = 'running' AND lease_expires_at < $1::timestamptz FOR UPDATE SKIP LOCKED
      )
      UPDATE :schema.jobs j SET
        state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN j.attempt >= j.max_attempts THEN 'failed' ELSE 'queued' END,
        finished_at = CASE WHEN j.cancel_requested_at IS NULL AND j.attempt < j.max_attempts THEN NULL ELSE $1 END,
        run_at = CASE WHEN j.cancel_requested_at IS NULL AND j.attempt < j.max_attempts THEN $1 ELSE j.run_at END,
        errors = CASE WHEN j.cancel_requested_at IS NULL
          THEN j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'time', $2::bigint, 'message', $3::text, 'stack', NULL))
          ELSE j.errors END,
        ${CLEAR_LEASE}
      FROM expired WHERE j.id = expired.id
      RETURNING j.id, j.state`, [date(now), now, LEASE_EXPIRED_MESSAGE]);
    const of = (state: string) => rows.filter((r) => r.state === state).map((r) => Number(r.id));
    return { requeued: of('queued'), failed: of('failed'), cancelled: of('cancelled') };
  }

  async jobCancel({ id, reason, now }: { id: number; reason: string | null; now: number }) {
    return this.#transaction(async (client) => {
      const row = (await client.query<PgJobRow>(this.#sql('SELECT * FROM :schema.jobs WHERE id = $1 FOR UPDATE'), [id])).rows[0];
      if (!row) return null;
      let outcome: CancelOutcome = 'unchanged';
      let updated = row;
      if (row.state === 'queued') {
        updated = (await client.query<PgJobRow>(this.#sql(`UPDATE :schema.jobs SET state = 'cancelled', cancel_requested_at = $2,
          cancel_reason = $3, finished_at = $2 WHERE id = $1 RETURNING *`), [id, date(now), reason])).rows[0]!;
        outcome = 'cancelled';
      } else if (row.state === 'running') {
        updated = (await client.query<PgJobRow>(this.#sql(`UPDATE :schema.jobs SET cancel_requested_at = coalesce(cancel_requested_at, $2),
          cancel_reason = coalesce(cancel_reason, $3) WHERE id = $1 RETURNING *`), [id, date(now), reason])).rows[0]!;
        outcome = 'requested';
      }
      return { job: pgRowToJob(updated), outcome };
    });
  }

  async jobRetry({ id, now }: { id: number; now: number }) {
    return this.#transaction(async (client) => {
      const row = (await client.query<PgJobRow>(this.#sql('SELECT * FROM :schema.jobs WHERE id = $1 FOR UPDATE'), [id])).rows[0];
      if (!row) return null;
      if (row.state !== 'failed' && row.state !== 'cancelled') return { job: pgRowToJob(row), retried: false };
      if (row.key !== null) {
        const live = await client.query(this.#sql(`SELECT 1 FROM :schema.jobs WHERE key = $1 AND state IN ('queued','running')`), [row.key]);
        if (live.rows.length > 0) {
          throw new ConflictError(`job ${id} cannot be retried: another job with key "${row.key}" is queued or running`, row.state);
        }
      }
      const updated = (await client.query<PgJobRow>(this.#sql(`UPDATE :schema.jobs SET state = 'queued', run_at = $2, attempt = 0, result = NULL,
          cancel_requested_at = NULL, cancel_reason = NULL, finished_at = NULL, ${CLEAR_LEASE}
        WHERE id = $1 RETURNING *`), [id, date(now)])).rows[0]!;
      return { job: pgRowToJob(updated), retried: true };
    });
  }

  async jobGet({ id }: { id: number }) {
    const rows = await this.#query<PgJobRow>('get', 'SELECT * FROM :schema.jobs WHERE id = $1', [id]);
    return rows[0] ? pgRowToJob(rows[0]) : null;
  }

  async jobList(params: JobFilter & { limit: number; beforeId?: number }) {
    const rows = await this.#query<PgJobRow>('list', `
      SELECT * FROM :schema.jobs
      WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2) AND ($3::text IS NULL OR task = $3)
        AND ($4::bigint IS NULL OR id < $4)
      ORDER BY id DESC LIMIT $5`, [params.state ?? null, params.queue ?? null, params.task ?? null, params.beforeId ?? null, params.limit]);
    return rows.map(pgRowToJob);
  }

  async workerUpsert({ worker, ttlMs, now }: { worker: WorkerRegistration; ttlMs: number; now: number }): Promise<void> {
    await this.#query(null, `
      INSERT INTO :schema.workers (id, host, pid, started_at, last_heartbeat_at, expires_at, concurrency, queues, running)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, expires_at = excluded.expires_at,
        concurrency = excluded.concurrency, queues = excluded.queues, running = excluded.running`,
    [worker.id, worker.host, worker.pid, date(worker.startedAt), date(now), date(now + ttlMs), worker.concurrency, worker.queues, worker.running]);
  }

  async workerDelete({ id }: { id: string }): Promise<boolean> {
    return (await this.#query<{ id: string }>(null, 'DELETE FROM :schema.workers WHERE id = $1 RETURNING id', [id])).length === 1;
  }

  async workerList({ now }: { now: number }): Promise<WorkerRecord[]> {
    const rows = await this.#query<{
      id: string;
      host: string;
      pid: number;
      started_at: Date;
      last_heartbeat_at: Date;
      expires_at: Date;
      concurrency: number;
      queues: string[];
      running: string[];
    }>(null, 'SELECT * FROM :schema.workers WHERE expires_at > $1 ORDER BY id', [date(now)]);
    return rows.map((r) => ({
      id: r.id,
      host: r.host,
      pid: r.pid,
      startedAt: r.started_at.getTime(),
      lastHeartbeatAt: r.last_heartbeat_at.getTime(),
      expiresAt: r.expires_at.getTime(),
      concurrency: r.concurrency,
      queues: r.queues,
      running: r.running.map(Number),
    }));
  }

  async queueThroughput({ since }: { since: number }): Promise<ThroughputRow[]> {
    const rows = await this.#query<{ queue: string; minute: string; completed: string; failed: string }>(null, `
      SELECT queue, (floor(extract(epoch FROM finished_at) / 60) * 60000)::bigint AS minute,
        count(*) FILTER (WHERE state = 'completed') AS completed, count(*) FILTER (WHERE state = 'failed') AS failed
      FROM :schema.jobs WHERE finished_at >= $1 AND state IN ('completed', 'failed')
      GROUP BY 1, 2 ORDER BY 2, 1`, [date(since)]);
    return rows.map((r) => ({ queue: r.queue, minute: Number(r.minute), completed: Number(r.completed), failed: Number(r.failed) }));
  }

  async queueCounts({ queuePrefix }: { queuePrefix?: string }): Promise<QueueCount[]> {
    const rows = await this.#query<{ queue: string; state: QueueCount['state']; count: string }>('queue_counts', `
      SELECT queue, state, count(*) AS count FROM :schema.jobs
      WHERE $1::text IS NULL OR left(queue, length($1)) = $1
      GROUP BY queue, state ORDER BY queue, state`, [queuePrefix ?? null]);
    return rows.map((r) => ({ queue: r.queue, state: r.state, count: Number(r.count) }));
  }

  async leaseAcquire({ name, owner, ttlMs, now }: { name: string; owner: string; ttlMs: number; now: number }): Promise<LeaseAcquireResult> {
    // The upsert takes the row lock, so two acquirers serialize; the loser's WHERE sees
    // the winner's live lease. A holder that releases between our upsert and our read
    // makes us try again.
    for (let round = 0; ; round++) {
      const rows = await this.#query<{ token: string; expires_at: Date }>('lease_acquire', `
        INSERT INTO :schema.leases AS l (name, owner, token, expires_at) VALUES ($1, $2, 1, $3)
        ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at
          WHERE l.owner IS NULL OR l.expires_at <= $4
        RETURNING token, expires_at`, [name, owner, date(now + ttlMs), date(now)]);
      if (rows[0]) return { acquired: true, token: Number(rows[0].token), expiresAt: rows[0].expires_at.getTime() };
      const held = (await this.#query<{ owner: string | null; expires_at: Date | null }>('lease_holder', 'SELECT owner, expires_at FROM :schema.leases WHERE name = $1', [name]))[0];
      if (held?.owner && held.expires_at && held.expires_at.getTime() > now) return { acquired: false, owner: held.owner, expiresAt: held.expires_at.getTime() };
      if (round === 5) throw new ConflictError(`lease "${name}" changed hands 5 times during one acquire`);
    }
  }

  async leaseRenew({ name, owner, token, ttlMs, now }: { name: string; owner: string; token: number; ttlMs: number; now: number }) {
    const rows = await this.#query('lease_renew', 'UPDATE :schema.leases SET expires_at = $4 WHERE name = $1 AND owner = $2 AND token = $3 RETURNING 1', [
      name,
      owner,
      token,
      date(now + ttlMs),
    ]);
    return rows.length === 1;
  }

  async leaseRelease({ name, owner, token }: { name: string; owner: string; token: number }) {
    const rows = await this.#query('lease_release', 'UPDATE :schema.leases SET owner = NULL, expires_at = NULL WHERE name = $1 AND owner = $2 AND token = $3 RETURNING 1', [
      name,
      owner,
      token,
    ]);
    return rows.length === 1;
  }

  async leaseGet({ name }: { name: string }): Promise<LeaseRecord | null> {
    const row = (await this.#query<{ name: string; owner: string | null; token: string; expires_at: Date | null }>('lease_get', 'SELECT * FROM :schema.leases WHERE name = $1', [name]))[0];
    return row ? { name: row.name, owner: row.owner, token: Number(row.token), expiresAt: row.expires_at?.getTime() ?? null } : null;
  }

  async serviceEnsure({ name, now }: { name: string; now: number }): Promise<ServiceRecord> {
    await this.#query('service_ensure', 'INSERT INTO :schema.services (name, created_at, updated_at) VALUES ($1, $2, $2) ON CONFLICT (name) DO NOTHING', [name, date(now)]);
    return (await this.serviceGet({ name }))!;
  }

  async serviceGet({ name }: { name: string }): Promise<ServiceRecord | null> {
    const row = (await this.#query<PgServiceRow>('service_get', `SELECT s.*, l.owner AS holder, l.expires_at AS holder_until FROM :schema.services s
      LEFT JOIN :schema.leases l ON l.name = 'service:' || s.name WHERE s.name = $1`, [name]))[0];
    return row ? pgRowToService(row) : null;
  }

  async serviceList({ now }: { now: number }): Promise<ServiceRecord[]> {
    const rows = await this.#query<PgServiceRow>('service_list', `SELECT s.*, CASE WHEN l.expires_at > $1 THEN l.owner END AS holder,
        CASE WHEN l.expires_at > $1 THEN l.expires_at END AS holder_until
      FROM :schema.services s LEFT JOIN :schema.leases l ON l.name = 'service:' || s.name ORDER BY s.name`, [date(now)]);
    return rows.map(pgRowToService);
  }

  async serviceRecord(p: { name: string; leaseName: string; token: number; lastRunAt: number; nextRunAt: number | null; error: string | null; now: number }) {
    const rows = await this.#query('service_record', `UPDATE :schema.services SET
        last_run_at = CASE WHEN $5::text IS NULL THEN $3::timestamptz ELSE last_run_at END,
        next_run_at = $4,
        last_error = coalesce($5::text, last_error),
        last_error_at = CASE WHEN $5::text IS NULL THEN last_error_at ELSE $6 END,
        failures = CASE WHEN $5::text IS NULL THEN 0 ELSE failures + 1 END,
        updated_at = $6
      WHERE name = $1 AND EXISTS (SELECT 1 FROM :schema.leases WHERE name = $2 AND token = $7 AND owner IS NOT NULL FOR SHARE)
      RETURNING 1`, [p.name, p.leaseName, date(p.lastRunAt), p.nextRunAt === null ? null : date(p.nextRunAt), p.error, date(p.now), p.token]);
    return rows.length === 1;
  }

  async serviceSetPaused({ name, paused, now }: { name: string; paused: boolean; now: number }) {
    return (await this.#query('service_pause', 'UPDATE :schema.services SET paused = $2, updated_at = $3 WHERE name = $1 RETURNING 1', [name, paused, date(now)])).length === 1;
  }

  async serviceTrigger({ name, now }: { name: string; now: number }) {
    return (await this.#query('service_trigger', 'UPDATE :schema.services SET next_run_at = $2, updated_at = $2 WHERE name = $1 RETURNING 1', [name, date(now)])).length === 1;
  }

  async scheduleUpsert({ schedule: d, nextRunAt, now }: { schedule: ScheduleDefinitionRow; nextRunAt: number | null; now: number }) {
    const row = (await this.#query<PgScheduleRow & { inserted: boolean }>('schedule_upsert', `
      INSERT INTO :schema.schedules AS s (name, cron, every_ms, timezone, task, payload, queue, priority, max_attempts, timeout_ms,
        catch_up, catch_up_limit, next_run_at, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8, $9, $10, $11, $12, $13, $14, $14)
      ON CONFLICT (name) DO UPDATE SET
        next_run_at = CASE WHEN s.cron IS NOT DISTINCT FROM excluded.cron AND s.every_ms IS NOT DISTINCT FROM excluded.every_ms
          AND s.timezone = excluded.timezone THEN s.next_run_at ELSE excluded.next_run_at END,
        cron = excluded.cron, every_ms = excluded.every_ms, timezone = excluded.timezone, task = excluded.task,
        payload = excluded.payload, queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
        timeout_ms = excluded.timeout_ms, catch_up = excluded.catch_up, catch_up_limit = excluded.catch_up_limit,
        updated_at = excluded.updated_at
      RETURNING *, (xmax = 0) AS inserted`, [
      d.name, d.cron, d.everyMs, d.timezone, d.task, d.payload, d.queue, d.priority, d.maxAttempts, d.timeoutMs,
      d.catchUp, d.catchUpLimit, nextRunAt === null ? null : date(nextRunAt), date(now),
    ]))[0]!;
    return { schedule: pgRowToSchedule(row), created: row.inserted };
  }

  async scheduleGet({ name }: { name: string }): Promise<ScheduleRecord | null> {
    const row = (await this.#query<PgScheduleRow>('schedule_get', 'SELECT * FROM :schema.schedules WHERE name = $1', [name]))[0];
    return row ? pgRowToSchedule(row) : null;
  }

  async scheduleList(_params: { now?: number }): Promise<ScheduleRecord[]> {
    return (await this.#query<PgScheduleRow>('schedule_list', 'SELECT * FROM :schema.schedules ORDER BY name')).map(pgRowToSchedule);
  }

  async scheduleDue({ now, limit }: { now: number; limit: number }) {
    const due = await this.#query<PgScheduleRow>('schedule_due', `SELECT * FROM :schema.schedules
      WHERE NOT paused AND next_run_at <= $1 ORDER BY next_run_at, name LIMIT $2`, [date(now), limit]);
    const earliest = (await this.#query<{ t: Date | null }>('schedule_earliest', 'SELECT min(next_run_at) AS t FROM :schema.schedules WHERE NOT paused'))[0]?.t ?? null;
    return { due: due.map(pgRowToSchedule), earliest: earliest?.getTime() ?? null };
  }

  async scheduleAdvance(p: Parameters<Store['scheduleAdvance']>[0]): Promise<{ advanced: boolean; jobs: Job[] }> {
    const lastTick = p.jobs.length > 0 ? Math.max(...p.jobs.map((j) => j.scheduledFor)) : null;
    return this.#transaction(async (client) => {
      // The compare-and-set: the row lock serializes racing instances; the losers'
      // WHERE no longer matches once the winner committed the new next_run_at.
      const moved = await client.query(this.#sql(`UPDATE :schema.schedules SET next_run_at = $3, last_run_at = coalesce($4, last_run_at),
          last_worker = CASE WHEN $4::timestamptz IS NULL THEN last_worker ELSE $5 END, updated_at = $6
        WHERE name = $1 AND next_run_at = $2 AND NOT paused`), [
        p.name,
        date(p.expectedNextRunAt),
        p.nextRunAt === null ? null : date(p.nextRunAt),
        lastTick === null ? null : date(lastTick),
        p.workerId,
        date(p.now),
      ]);
      if (moved.rowCount !== 1) return { advanced: false, jobs: [] };
      if (p.jobs.length === 0) return { advanced: true, jobs: [] };
      const rows = (await client.query<PgJobRow>(this.#sql(`
        INSERT INTO :schema.jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, key, created_at, schedule_name, scheduled_for)
        SELECT queue, task, payload::json, 'queued', priority, run_at, max_attempts, timeout_ms, NULL, $9, $10, scheduled_for
        FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[], $7::int[], $8::timestamptz[])
          AS t(queue, task, payload, priority, run_at, max_attempts, timeout_ms, scheduled_for)
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
      ])).rows;
      return { advanced: true, jobs: rows.map(pgRowToJob).sort((a, b) => a.id - b.id) };
    });
  }

  async scheduleTrigger({ name, now }: { name: string; now: number }): Promise<Job | null> {
    const row = (await this.#query<PgJobRow>('schedule_trigger', `
      INSERT INTO :schema.jobs (queue, task, payload, state, priority, run_at, max_attempts, timeout_ms, created_at, schedule_name)
      SELECT queue, task, payload, 'queued', priority, $2, max_attempts, timeout_ms, $2, name FROM :schema.schedules WHERE name = $1
      RETURNING *`, [name, date(now)]))[0];
    return row ? pgRowToJob(row) : null;
  }

  async scheduleSetPaused({ name, paused, nextRunAt, now }: { name: string; paused: boolean; nextRunAt: number | null; now: number }) {
    const rows = paused
      ? await this.#query('schedule_pause', 'UPDATE :schema.schedules SET paused = true, updated_at = $2 WHERE name = $1 RETURNING 1', [name, date(now)])
      : await this.#query('schedule_resume', 'UPDATE :schema.schedules SET paused = false, next_run_at = $3, updated_at = $2 WHERE name = $1 RETURNING 1', [
          name,
          date(now),
          nextRunAt === null ? null : date(nextRunAt),
        ]);
    return rows.length === 1;
  }

  async scheduleRemove({ name }: { name: string }) {
    return (await this.#query('schedule_remove', 'DELETE FROM :schema.schedules WHERE name = $1 RETURNING 1', [name])).length === 1;
  }

  watchChanges({ listener }: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void {
    const cancelChannel = `${this.schema}_cancel`;
    const onNotify = (message?: { channel: string; payload: string | undefined }) => {
      if (message?.channel !== cancelChannel || !message.payload) return listener();
      try {
        // The trigger sends {"id", "reason"}: the worker can abort at once, without a read.
        const { id, reason } = JSON.parse(message.payload) as { id: number; reason: string | null };
        listener({ cancel: { id: Number(id), reason } });
      } catch {
        listener();
      }
    };
    const pgListener = new PgListener(this.#connectionString, [`${this.schema}_jobs`, cancelChannel], onNotify, this.#onError);
    this.#listeners.add(pgListener);
    return () => {
      this.#listeners.delete(pgListener);
      void pgListener.close();
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#listeners].map((l) => l.close()));
    this.#listeners.clear();
    await Promise.all([this.#pool.end(), this.#hotPool.end()]);
  }
}
