import pg from 'pg';
import { systemClock, type Clock } from '../../clock.js';
import { ConfigError, StoreError, describeError } from '../../errors.js';
import { DriverStore, type Operations } from '../driver-store.js';
import { checkSchema, runMigrations, type Migration } from '../migrate.js';
import type { ClockReading, StoreChange } from '../store.js';
import type { PgContext } from './context.js';
import * as jobLeases from './job-leases.js';
import * as jobBulk from './job-bulk.js';
import * as jobs from './jobs.js';
import * as leases from './leases.js';
import { PgListener } from './listener.js';
import { migrations as postgresMigrations } from './migrations/index.js';
import { channelPrefix, statementName } from './names.js';
import * as queues from './queues.js';
import * as retention from './retention.js';
import * as tableHealth from './table-health.js';
import * as concurrencyKeys from './concurrency-keys.js';
import * as queueLimits from './queue-limits.js';
import * as rateLimits from './rate-limits.js';
import * as queueDeclarations from './queue-declarations.js';
import * as queuePauses from './queue-pauses.js';
import * as schedules from './schedules.js';
import { ServerClock } from './server-clock.js';
import { PGBOUNCER_SETUP, urlForMessages } from './url.js';
import * as services from './services.js';
import * as workers from './workers.js';
import * as steps from './steps.js';
import * as suspend from './suspend.js';
import * as cancel from './cancel.js';
import * as messages from './messages.js';
import * as children from './children.js';

/** Options of the PostgreSQL driver. */
export interface PostgresStoreOptions {
  /** Schema holding Baton's tables (created when missing). @defaultValue 'baton' */
  schema?: string;
  /**
   * Connections of the pool every statement uses (claims, completions, lease
   * renewals, enqueues, reads), opened on demand and closed after 10 s idle. With
   * the LISTEN connection a process holds at most `poolSize + 1` connections to
   * PostgreSQL (to PgBouncer when `pgbouncer`). It is also how many claims a worker
   * keeps in flight at once under a backlog ({@link PostgresStore.claimsInFlight}):
   * 1 makes claims and completions take turns on one connection.
   * @defaultValue {@link DEFAULT_POOL_SIZE} (4)
   */
  poolSize?: number;
  /**
   * `connectionString` is a PgBouncer in transaction pooling mode: statements are
   * sent unnamed (no prepared statement outlives its transaction) and no setting is
   * sent at connection start. Needs `directUrl`, for what transaction pooling
   * cannot carry: LISTEN, migrations, and a read-only store's connections (their
   * `default_transaction_read_only` is a connection start setting, which PgBouncer
   * 1.18 refuses). @defaultValue false
   */
  pgbouncer?: boolean;
  /**
   * A URL straight to PostgreSQL (as Prisma's `directUrl`), for the LISTEN
   * connection and migrations (and, with `pgbouncer`, a read-only store's pool).
   * @defaultValue `connectionString`
   */
  directUrl?: string;
  /** Migrations to apply (tests pass extra ones). @defaultValue the shipped ones */
  migrations?: Migration[];
  /**
   * Every connection runs with `default_transaction_read_only` on: a write fails
   * (StoreError), whatever the role may do. The opener calls
   * {@link PostgresStore.schemaCheck}, not `migrate`. @defaultValue false
   */
  readOnly?: boolean;
  /** Called with errors of idle pool connections and of the LISTEN connection (they never throw). */
  onError?: (error: unknown, where: string) => void;
  /**
   * This host's clock, which {@link PostgresStore.clock} corrects by the measured
   * offset (tests pass a skewed one to simulate another host). @defaultValue the system clock
   */
  hostClock?: Clock;
}

/**
 * Pool connections per process by default: with the LISTEN connection, 5 per process
 * at most (opened on demand: an idle worker holds 2), so 19 busy worker processes fit
 * `max_connections = 100`; a larger fleet sets `?pool_size=1` (2 per process) or goes
 * through PgBouncer (docs/postgres.md, "Connections and PgBouncer").
 */
export const DEFAULT_POOL_SIZE = 4;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Schemas PostgreSQL reserves for itself (CREATE SCHEMA refuses the pg_ prefix). */
const SYSTEM_SCHEMA = /^(pg_|information_schema$)/;

/** Every operation of the PostgreSQL driver, one file per concern. */
const operations: Operations<PgContext> = { ...jobs, ...jobLeases, ...queues, ...retention, ...tableHealth, ...leases, ...services, ...schedules, ...workers, ...jobBulk, ...queuePauses, ...queueLimits, ...rateLimits, ...queueDeclarations, ...concurrencyKeys, ...steps, ...suspend, ...messages, ...children, ...cancel };

/**
 * The fleet driver: node-postgres with one pool (`poolSize` connections) and one
 * LISTEN connection per store, shared by every worker of the process. Claims use
 * `FOR UPDATE SKIP LOCKED` in one statement; completions, lease extensions and
 * releases are one statement per batch (unnest of arrays), every write about a
 * running job fenced by its lease token. Wake-ups and cancel requests arrive by
 * LISTEN/NOTIFY (triggers send them at commit) on that connection (to `directUrl`
 * when given), with the workers' polling as the safety net.
 * Times are timestamptz; `now` comes from the caller, whose clock should be
 * {@link PostgresStore.clock}: the server's time, whatever this host's clock says.
 */
export class PostgresStore extends DriverStore<PgContext> {
  readonly driver = 'postgres';
  /** The pool's size: a worker's claims each take a connection of their own, none waits for another's. */
  readonly claimsInFlight: number;
  readonly schema: string;
  readonly #clock: ServerClock;
  readonly #pool: pg.Pool;
  /** Where LISTEN connects: the direct URL, else the pool's. */
  readonly #listenUrl: string;
  /** The LISTEN URL as messages name it. */
  readonly #listenLabel: string;
  /** The pool's URL as messages name it (a read-only Baton behind PgBouncer reads through the direct URL). */
  readonly #poolLabel: string;
  /** The direct URL, where migrations connect; without it they use the pool. */
  readonly #directUrl: string | undefined;
  readonly #migrations: Migration[];
  readonly #channel: string;
  /** Fills `:schema` and `:channel` into a statement or migration text. */
  readonly #fill: (text: string) => string;
  readonly #onError: (error: unknown, where: string) => void;
  /** The one LISTEN connection, open while anything watches changes. */
  #listener: PgListener | undefined;
  readonly #watchers = new Set<(change?: StoreChange) => void>();

  /** @throws ConfigError for an invalid schema name, or `pgbouncer` without `directUrl` */
  constructor(connectionString: string, options: PostgresStoreOptions = {}) {
    const schema = options.schema ?? 'baton';
    if (!SCHEMA_NAME.test(schema)) {
      throw new ConfigError(`schema name ${JSON.stringify(schema)} is invalid: use lowercase letters, digits and _ (at most 63)`);
    }
    if (SYSTEM_SCHEMA.test(schema)) {
      throw new ConfigError(`schema name ${JSON.stringify(schema)} is reserved by PostgreSQL (pg_*, information_schema): name a schema of Baton's own`);
    }
    if (options.pgbouncer && !options.directUrl) {
      throw new ConfigError('pgbouncer=true: LISTEN and migrations cannot go through transaction pooling; give a direct URL to PostgreSQL (createBaton option directDatabase, or BATON_DIRECT_DATABASE_URL)');
    }
    const readOnly = options.readOnly ? { options: '-c default_transaction_read_only=on' } : {};
    const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
    const pool = new pg.Pool({
      connectionString: options.pgbouncer && options.readOnly ? options.directUrl : connectionString,
      max: poolSize,
      application_name: 'baton',
      ...readOnly,
    });
    const onError = options.onError ?? (() => undefined);
    /** Where {@link PgContext.ownConnection} connects: the direct URL, else the pool's. */
    const ownUrl = options.directUrl ?? connectionString;
    /** The URLs as messages name them (no user, password or parameters). */
    const directLabel = options.directUrl ? `direct database URL ${urlForMessages(options.directUrl)}` : undefined;
    const databaseLabel = `database URL ${urlForMessages(connectionString)}`;
    const ownLabel = directLabel ?? databaseLabel;
    const named = !options.pgbouncer;
    const channel = channelPrefix(schema);
    const texts = new Map<string, { text: string; name: string | undefined }>();
    /** The statement as sent, and its prepared-statement name when it has a label. */
    const statement = (label: string | null, raw: string) => {
      const key = `${label ?? ''}\u0000${raw}`;
      let s = texts.get(key);
      if (!s) {
        const text = raw.replaceAll(':schema', `"${schema}"`).replaceAll(':channel', channel);
        texts.set(key, (s = { text, name: label === null || !named ? undefined : statementName(label, text) }));
      }
      return s;
    };
    super(
      {
        schema,
        sql: (text) => statement(null, text).text,
        async query(label, raw, values = []) {
          const { text, name } = statement(label, raw);
          try {
            return (await pool.query({ text, values, ...(name ? { name } : {}) })).rows;
          } catch (error) {
            throw name ? pooledStatementHint(label!, error) : error;
          }
        },
        transaction: (fn) => pooledTransaction(pool, fn),
        ownConnection: (fn) => withConnection(ownUrl, { op: 'ownConnection', label: ownLabel, onError }, fn),
      },
      operations,
    );
    this.schema = schema;
    this.claimsInFlight = poolSize;
    this.#channel = channel;
    this.#fill = (text) => statement(null, text).text;
    this.#pool = pool;
    this.#listenUrl = options.directUrl ?? connectionString;
    this.#listenLabel = ownLabel;
    this.#poolLabel = options.pgbouncer && options.readOnly ? directLabel! : databaseLabel;
    this.#directUrl = options.directUrl;
    this.#migrations = options.migrations ?? postgresMigrations;
    this.#onError = onError;
    this.#clock = new ServerClock(options.hostClock ?? systemClock);
    // An idle client's error (server restart, network drop) is emitted on the pool;
    // without a listener Node would crash the process.
    pool.on('error', (error) => this.#onError(error, 'pool'));
    // A client checked out of the pool (a transaction, a query) has no pool listener, and pg's
    // Client emits 'error' whenever its connection ends or a FATAL message (57P01 on a server
    // restart) arrives, even mid-query: unheard, the process ends (seen in the soak, issue 34).
    // Every client the pool makes keeps this listener for life; the statement the error
    // reaches fails on its own, and pg-pool drops the broken client on release.
    pool.on('connect', (client) => client.on('error', () => undefined));
  }

  /** The server's time: this host's clock plus the offset of the latest {@link clockSync}. */
  get clock(): Clock {
    return this.#clock;
  }

  /** The first statements on the pool (clock, schema check): errors name the URL the pool connects to. */
  async clockSync(): Promise<ClockReading> {
    return this.#clock.sync(async () => {
      const rows = await this.#poolQuery<{ ms: number }>('clockSync', 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms');
      return rows[0]!.ms;
    });
  }

  /** Reads the ledger only: a role with USAGE on the schema and SELECT on its tables is enough. */
  async schemaCheck(): Promise<void> {
    const q = `"${this.schema}"`;
    const rows = await this.#poolQuery<{ ledger: string | null }>('schemaCheck', 'SELECT to_regclass($1) AS ledger', [`${q}.baton_migrations`]);
    const applied = rows[0]?.ledger
      ? await this.#poolQuery<{ version: number; name: string; breaking: boolean }>('schemaCheck', `SELECT version, name, breaking FROM ${q}.baton_migrations`)
      : [];
    checkSchema(this.#migrations, `schema "${this.schema}"`, applied);
  }

  /**
   * A pool query whose error names the URL the pool connects to, with a hint when
   * PgBouncer refused the read-only start setting.
   * @throws StoreError (`op`) "<which URL> postgres://host:port/db: <cause>"
   */
  async #poolQuery<R extends pg.QueryResultRow>(op: string, text: string, values: unknown[] = []): Promise<R[]> {
    try {
      return (await this.#pool.query<R>(text, values)).rows;
    } catch (error) {
      const bouncer = /unsupported startup parameter/.test(describeError(error))
        ? ' — this URL reaches PgBouncer, which refuses the read-only start setting: point the direct URL at PostgreSQL itself, and mark a PgBouncer database URL with pgbouncer=true (read-only commands then read through the direct URL)'
        : '';
      throw new StoreError(op, error, `${this.#poolLabel}: ${describeError(error)}${bouncer}`);
    }
  }

  async migrate(): Promise<void> {
    const q = `"${this.schema}"`;
    await runMigrations(this.#migrations, `schema "${this.schema}"`, (fn) =>
      this.#directTransaction(async (client) => {
        // One migrator at a time across every process and host.
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`baton.migrate.${this.schema}`]);
        return fn({
          async applied() {
            await client.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
            await client.query(`CREATE TABLE IF NOT EXISTS ${q}.baton_migrations (
              version integer PRIMARY KEY, name text NOT NULL, breaking boolean NOT NULL DEFAULT false, applied_at timestamptz NOT NULL DEFAULT now())`);
            return (await client.query<{ version: number; name: string; breaking: boolean }>(`SELECT version, name, breaking FROM ${q}.baton_migrations`)).rows;
          },
          exec: async (sql) => void (await client.query(this.#fill(sql))),
          async record(m) {
            await client.query(`INSERT INTO ${q}.baton_migrations (version, name, breaking) VALUES ($1, $2, $3)`, [m.version, m.name, m.breaking ?? false]);
          },
        });
      }),
    );
  }

  /**
   * Runs `fn` inside BEGIN … COMMIT on a connection of its own to the direct URL
   * (closed after), or on a pool connection when there is no direct URL.
   */
  async #directTransaction<T>(fn: (client: pg.ClientBase) => Promise<T>): Promise<T> {
    if (this.#directUrl === undefined) return pooledTransaction(this.#pool, fn);
    const label = `direct database URL ${urlForMessages(this.#directUrl)} (migrations and LISTEN use it)`;
    return withConnection(this.#directUrl, { op: 'migrate', label, onError: this.#onError }, (client) => transaction(client, fn));
  }

  /**
   * Every watcher of the process shares one LISTEN connection (to the direct URL),
   * opened with the first watcher and closed with the last.
   */
  watchChanges({ listener }: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void {
    this.#watchers.add(listener);
    this.#listener ??= this.#listen();
    return () => {
      if (!this.#watchers.delete(listener) || this.#watchers.size > 0) return;
      void this.#listener?.close();
      this.#listener = undefined;
    };
  }

  #listen(): PgListener {
    const cancelChannel = `${this.#channel}_cancel`;
    const jobsChannel = `${this.#channel}_jobs`;
    const finishedChannel = `${this.#channel}_done`; // no longer than `_cancel`: fits the 63-byte channel names (names.ts)
    const notify = (change?: StoreChange) => this.#watchers.forEach((watcher) => watcher(change));
    const onNotify = (message?: { channel: string; payload: string | undefined }) => {
      if (message?.channel === finishedChannel) return notify({ finished: message.payload ? message.payload.split(',').map(Number) : [] });
      if (message?.channel === jobsChannel) return notify({ claimable: true });
      if (message?.channel !== cancelChannel || !message.payload) return notify();
      try {
        // The trigger sends {"id", "reason"}: the worker can abort at once, without a read.
        const { id, reason } = JSON.parse(message.payload) as { id: number; reason: string | null };
        notify({ cancel: { id: Number(id), reason } });
      } catch {
        notify();
      }
    };
    const pool = this.#pool;
    return new PgListener(this.#listenUrl, [jobsChannel, cancelChannel, finishedChannel], {
      label: this.#listenLabel,
      onNotify,
      onError: this.#onError,
      probe: async (channel) => void (await pool.query('SELECT pg_notify($1, $2)', [channel, ''])),
    });
  }

  async close(): Promise<void> {
    this.#watchers.clear();
    await this.#listener?.close();
    this.#listener = undefined;
    await this.#pool.end();
  }
}

/**
 * Runs `fn` on one connection of `pool` inside BEGIN … COMMIT; ROLLBACK when it throws. A
 * connection that ends meanwhile fails the statement in flight; its 'error' event is heard
 * by the listener every pool client keeps (see the constructor), and pg-pool drops the
 * broken client on release (it is no longer queryable).
 */
async function pooledTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await transaction(client, fn);
  } finally {
    client.release();
  }
}

/**
 * Runs `fn` on a client of its own connected to `url`, then closes it (its errors
 * while open go to `onError`).
 * @param how.label - the URL as the connect error names it ("direct database URL postgres://host:port/db …")
 * @throws StoreError (`how.op`) "cannot connect to the <label>: <cause>" when it cannot connect; what `fn` throws
 */
async function withConnection<T>(
  url: string,
  how: { op: string; label: string; onError: (error: unknown, where: string) => void },
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'baton' });
  client.on('error', (error) => how.onError(error, 'direct'));
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new StoreError(how.op, error, `cannot connect to the ${how.label}: ${describeError(error)}`);
  }
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Runs `fn` on `client` inside BEGIN … COMMIT; ROLLBACK when it throws. */
async function transaction<C extends pg.ClientBase, T>(client: C, fn: (client: C) => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const value = await fn(client);
    await client.query('COMMIT');
    return value;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** PostgreSQL's codes for a prepared statement that exists already (42P05) or does not exist (26000). */
const STATEMENT_CLASH = new Set(['42P05', '26000']);

/**
 * A named prepared statement that the server says exists already, or does not
 * exist, means the pool's connections are shared behind Baton's back (a pooler in
 * transaction mode): the error gains that hint. Other errors are returned as they are.
 */
function pooledStatementHint(label: string, error: unknown): unknown {
  if (!STATEMENT_CLASH.has((error as { code?: unknown } | null)?.code as string)) return error;
  return new StoreError(
    label,
    error,
    `${describeError(error)}: the database URL seems to reach PostgreSQL through a pooler in transaction mode (PgBouncer), where prepared statements do not survive; ${PGBOUNCER_SETUP}`,
  );
}
