import pg from 'pg';
import { systemClock, type Clock } from '../../clock.js';
import { ConfigError } from '../../errors.js';
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
import * as queuePauses from './queue-pauses.js';
import * as schedules from './schedules.js';
import { ServerClock } from './server-clock.js';
import * as services from './services.js';
import * as workers from './workers.js';

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

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Schemas PostgreSQL reserves for itself (CREATE SCHEMA refuses the pg_ prefix). */
const SYSTEM_SCHEMA = /^(pg_|information_schema$)/;

/** Every operation of the PostgreSQL driver, one file per concern. */
const operations: Operations<PgContext> = { ...jobs, ...jobLeases, ...queues, ...leases, ...services, ...schedules, ...workers, ...jobBulk, ...queuePauses };

/**
 * The fleet driver: node-postgres with a pool. Claims use `FOR UPDATE SKIP LOCKED`
 * in one statement; completions, lease extensions and releases are one statement
 * per batch (unnest of arrays), every write about a running job fenced by its lease
 * token. Wake-ups and cancel requests arrive by LISTEN/NOTIFY (triggers send them
 * at commit) on a dedicated connection, with the workers' polling as the safety net.
 * Times are timestamptz; `now` comes from the caller, whose clock should be
 * {@link PostgresStore.clock}: the server's time, whatever this host's clock says.
 */
export class PostgresStore extends DriverStore<PgContext> {
  readonly driver = 'postgres';
  readonly schema: string;
  readonly #clock: ServerClock;
  readonly #pool: pg.Pool;
  /** Connections for the hot path: claims, completions, lease renewals (see constructor). */
  readonly #hotPool: pg.Pool;
  readonly #connectionString: string;
  readonly #migrations: Migration[];
  readonly #channel: string;
  /** Fills `:schema` and `:channel` into a statement or migration text. */
  readonly #fill: (text: string) => string;
  readonly #onError: (error: unknown, where: string) => void;
  readonly #listeners = new Set<PgListener>();

  /** @throws ConfigError for an invalid schema name */
  constructor(connectionString: string, options: PostgresStoreOptions = {}) {
    const schema = options.schema ?? 'baton';
    if (!SCHEMA_NAME.test(schema)) {
      throw new ConfigError(`schema name ${JSON.stringify(schema)} is invalid: use lowercase letters, digits and _ (at most 63)`);
    }
    if (SYSTEM_SCHEMA.test(schema)) {
      throw new ConfigError(`schema name ${JSON.stringify(schema)} is reserved by PostgreSQL (pg_*, information_schema): name a schema of Baton's own`);
    }
    const readOnly = options.readOnly ? ' -c default_transaction_read_only=on' : '';
    const pool = new pg.Pool({ connectionString, max: options.poolSize ?? 10, application_name: 'baton', ...(readOnly ? { options: readOnly.trim() } : {}) });
    // Claims, completions and lease renewals commit without waiting for the WAL flush
    // (synchronous_commit off): a crash of the database server itself may forget the
    // last few milliseconds of them, and those jobs simply run again (at-least-once,
    // as after any crash). Enqueues, failures, cancels and checkpoints stay durable.
    const hotPool = new pg.Pool({ connectionString, max: options.hotPoolSize ?? 4, application_name: 'baton', options: `-c synchronous_commit=off${readOnly}` });
    const channel = channelPrefix(schema);
    const texts = new Map<string, { text: string; name: string | undefined }>();
    /** The statement as sent, and its prepared-statement name when it has a label. */
    const statement = (label: string | null, raw: string) => {
      const key = `${label ?? ''}\u0000${raw}`;
      let s = texts.get(key);
      if (!s) {
        const text = raw.replaceAll(':schema', `"${schema}"`).replaceAll(':channel', channel);
        texts.set(key, (s = { text, name: label === null ? undefined : statementName(label, text) }));
      }
      return s;
    };
    super(
      {
        schema,
        sql: (text) => statement(null, text).text,
        async query(label, raw, values = [], options) {
          const { text, name } = statement(label, raw);
          return (await (options?.hot ? hotPool : pool).query({ text, values, ...(name ? { name } : {}) })).rows;
        },
        transaction: (fn) => transaction(pool, fn),
      },
      operations,
    );
    this.schema = schema;
    this.#channel = channel;
    this.#fill = (text) => statement(null, text).text;
    this.#pool = pool;
    this.#hotPool = hotPool;
    this.#connectionString = connectionString;
    this.#migrations = options.migrations ?? postgresMigrations;
    this.#onError = options.onError ?? (() => undefined);
    this.#clock = new ServerClock(options.hostClock ?? systemClock);
    // An idle client's error (server restart, network drop) is emitted on the pool;
    // without a listener Node would crash the process.
    pool.on('error', (error) => this.#onError(error, 'pool'));
    hotPool.on('error', (error) => this.#onError(error, 'pool'));
  }

  /** The server's time: this host's clock plus the offset of the latest {@link clockSync}. */
  get clock(): Clock {
    return this.#clock;
  }

  async clockSync(): Promise<ClockReading> {
    return this.#clock.sync(async () => {
      const rows = (await this.#pool.query<{ ms: number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms')).rows;
      return rows[0]!.ms;
    });
  }

  /** Reads the ledger only: a role with USAGE on the schema and SELECT on its tables is enough. */
  async schemaCheck(): Promise<void> {
    const q = `"${this.schema}"`;
    const { rows } = await this.#pool.query<{ ledger: string | null }>('SELECT to_regclass($1) AS ledger', [`${q}.baton_migrations`]);
    const applied = rows[0]?.ledger
      ? (await this.#pool.query<{ version: number; name: string; breaking: boolean }>(`SELECT version, name, breaking FROM ${q}.baton_migrations`)).rows
      : [];
    checkSchema(this.#migrations, `schema "${this.schema}"`, applied);
  }

  async migrate(): Promise<void> {
    const q = `"${this.schema}"`;
    await runMigrations(this.#migrations, `schema "${this.schema}"`, (fn) =>
      transaction(this.#pool, async (client) => {
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

  watchChanges({ listener }: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void {
    const cancelChannel = `${this.#channel}_cancel`;
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
    const pgListener = new PgListener(this.#connectionString, [`${this.#channel}_jobs`, cancelChannel], onNotify, this.#onError);
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

/** Runs `fn` on one connection of `pool` inside BEGIN … COMMIT; ROLLBACK when it throws. */
async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
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
