import * as z from 'zod';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import { parseConfig } from './validation.js';
import { isTask, type AnyTask } from './job/task.js';
import { distinctQueues, isQueue, type Queue } from './flow/queue.js';
import { DEFAULT_PAYLOAD_LIMIT } from './job/payload.js';
import type { Store } from './store/store.js';
import { defaultDatabaseUrl } from './store/open.js';

/** Options of `createBaton`. */
export interface BatonOptions {
  /** Database URL: `sqlite:PATH`. @defaultValue `BATON_DATABASE_URL`, else `sqlite:./baton.db` */
  database?: string;
  /**
   * PostgreSQL: a URL straight to the server, for the LISTEN connection and
   * migrations (as Prisma's `directUrl`), when `database` goes through a pooler;
   * required with `?pgbouncer=true`. See docs/postgres.md, "Connections and PgBouncer".
   * @defaultValue `BATON_DIRECT_DATABASE_URL` (for a PostgreSQL `database`), else none (LISTEN and migrations use `database`)
   */
  directDatabase?: string;
  /** An opened driver instead of `database` (tests, custom setups). */
  store?: Store;
  /** Tasks known to this client: enqueue by name is checked against them. @defaultValue [] */
  tasks?: AnyTask[];
  /**
   * Queues declared in code (`defineQueue`): their settings are stored when the database
   * opens (idempotent; an override set by the CLI, dashboard or HTTP API is kept), as are
   * those of the queues `tasks` name by definition; their retention applies to the pruner
   * of this Baton's workers. Not stored with `readOnly`. @defaultValue []
   */
  queues?: Queue[];
  /** Maximum serialized size of a payload, result or checkpoint, in bytes. @defaultValue 1 MiB */
  payloadLimit?: number;
  /** Run migrations when opening. @defaultValue true */
  migrate?: boolean;
  /**
   * Open for reading only (what the CLI's `jobs`, `job`, `schedules` and `services`
   * do): nothing is migrated or written at open, so reading needs no write access —
   * SQLite opens the file read-only (it must exist; a file or directory without
   * write permission is fine), PostgreSQL needs only USAGE on the schema and SELECT.
   * A schema missing a migration this code needs is refused (StoreError: run
   * `baton migrate` first) instead of migrated; a write (enqueue, cancel, a worker)
   * fails with StoreError. Overrides `migrate`. @defaultValue false
   */
  readOnly?: boolean;
  /** @defaultValue pino on stderr, level from BATON_LOG_LEVEL, else 'info' */
  logger?: Logger;
  /**
   * The time source of every `now` (tests inject one). @defaultValue the database's
   * time: SQLite, this host's clock; PostgreSQL, this host's clock corrected by its
   * offset to the server's, measured at open and every minute (one warning when it
   * exceeds 1 s)
   */
  clock?: Clock;
}

const schema = z.object({
  database: z.string().min(1).optional(),
  directDatabase: z.string().min(1).optional(),
  store: z.custom<Store>((v) => typeof v === 'object' && v !== null && typeof (v as Store).jobClaim === 'function').optional(),
  tasks: z.array(z.custom<AnyTask>(isTask, 'must be tasks made by defineTask')).optional(),
  queues: z.array(z.custom<Queue>(isQueue, 'must be queues made by defineQueue')).optional(),
  payloadLimit: z.number().int().min(1024).max(256 * 1024 * 1024).optional(),
  migrate: z.boolean().optional(),
  readOnly: z.boolean().optional(),
  logger: z.custom<Logger>((v) => typeof v === 'object' && v !== null && typeof (v as Logger).child === 'function').optional(),
  clock: z.custom<Clock>((v) => typeof v === 'object' && v !== null && typeof (v as Clock).now === 'function').optional(),
  // An unknown key is a typo (`datbase`): ignored, it sent the jobs to ./baton.db.
}).strict();

/**
 * Validates `createBaton` options and applies defaults.
 * @throws ConfigError naming the bad option
 */
export function resolveBatonOptions(options: BatonOptions) {
  const o = parseConfig(schema, options, 'option');
  const database = o.database ?? defaultDatabaseUrl();
  // The environment's direct URL serves PostgreSQL databases only; the option is checked against any.
  const directFromEnv = /^postgres(ql)?:\/\//.test(database) ? process.env.BATON_DIRECT_DATABASE_URL || undefined : undefined;
  return {
    database,
    directDatabase: o.directDatabase ?? directFromEnv,
    store: o.store,
    tasks: o.tasks ?? [],
    queues: distinctQueues([...(o.queues ?? []), ...(o.tasks ?? []).flatMap((t) => (t.queueDefinition ? [t.queueDefinition] : []))], 'option queues and tasks'),
    payloadLimit: o.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT,
    migrate: o.migrate ?? true,
    readOnly: o.readOnly ?? false,
  };
}
