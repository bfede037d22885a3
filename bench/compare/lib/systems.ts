/**
 * The systems the comparison runs: Baton on each driver (through the bench's
 * own fixtures, bench/fixtures/worker.ts and client.ts) and the three peers
 * (this package's fixtures). Each gives fresh, isolated storage per run (a SQLite
 * file, a PostgreSQL schema, a Redis key prefix), removed afterwards, and spawns
 * workers and clients that speak the same JSON-lines protocol.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { makeWorkerUtils, Logger, type WorkerUtils } from 'graphile-worker';
import { Redis } from 'ioredis';
import PgBoss from 'pg-boss';
import { NODE_TS_ARGS, spawnFixture, spawnScript, type Child } from '../../lib/child.js';
import { dropLeftoverSchemas, dropSchema, postgresDriver, postgresUrl, sqliteDriver, trackSchema, withAdmin, type BenchDriver } from '../../lib/drivers.js';
import { enqueueInBatches, openClient } from '../../lib/seed.js';
import { batonWorkerOptions, bullmqWorkerOptions, graphileOptions, pgBossWorkerOptions, PG_BOSS_SHORT_EXPIRE_SECONDS, SHORT_LEASE_MS } from './peer-options.js';

export type Variant = 'default' | 'short-lease' | 'handoff';

/** Fresh storage for one run of one workload. */
export interface Namespace {
  /** What this system's fixtures take (merged into their JSON config). */
  config: Record<string, unknown>;
  /** Removes it (schema, files, keys); idempotent. */
  drop(): Promise<void>;
}

export interface WorkerSpec {
  name: string;
  tasks: string[];
  concurrency: number;
  expect?: number;
  variant?: Variant;
  schedule?: boolean;
}

export interface System {
  /** Column label. */
  name: string;
  baton: boolean;
  /** Baton's systems: the bench driver it runs on (`sqlite`, `postgres`), whose storage floor (bench/floor) it is measured against. */
  driver?: string;
  version: string;
  /** Rejects with a clear message when its server does not answer. */
  check(): Promise<void>;
  /** Options lines printed under the table. */
  options(): string[];
  namespace(): Promise<Namespace>;
  /** Enqueues `count` no-op jobs (payload `{ i }`) in batches of `batch` from this process; ms taken. */
  enqueueBulk(ns: Namespace, count: number, batch: number): Promise<number>;
  worker(ns: Namespace, spec: WorkerSpec): Child;
  client(ns: Namespace, variant?: Variant): Child;
}

/** The W7 schedule every Baton worker declares. */
const BATON_SCHEDULE = { name: 'tick-every-second', every: 1_000 } as const;

const TASKS = ['noop', 'latency', 'wait-signal', 'checkpointer', 'tick'];
const hex = () => randomBytes(5).toString('hex');
const fixture = (file: string) => fileURLToPath(new URL(`../fixtures/${file}`, import.meta.url));
const peerChild = (file: string, config: object, name: string) => spawnScript(fixture(file), config, { nodeArgs: NODE_TS_ARGS, name });

/** Key prefixes still to remove (swept on exit paths; schemas: bench/lib/drivers.ts). */
const livePrefixes = new Set<string>();
/** Every schema and key prefix this run created (checked at the end; another run's are not this run's business). */
const createdSchemas = new Set<string>();
const createdPrefixes = new Set<string>();

export const REDIS = { host: process.env.BATON_BENCH_REDIS_HOST || '127.0.0.1', port: Number(process.env.BATON_BENCH_REDIS_PORT || 6379) };

function redisClient(): Redis {
  return new Redis({ ...REDIS, maxRetriesPerRequest: 1, lazyConnect: true, connectTimeout: 3_000, retryStrategy: () => null });
}

/** Deletes every key under `prefix:`; returns how many. */
async function deleteKeys(prefix: string): Promise<number> {
  const redis = redisClient();
  redis.on('error', () => undefined);
  await redis.connect();
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  livePrefixes.delete(prefix);
  return deleted;
}

/** Removes whatever this process created and has not removed yet (exit paths). */
export async function dropLeftovers(): Promise<void> {
  await dropLeftoverSchemas();
  for (const prefix of [...livePrefixes]) await deleteKeys(prefix).catch(() => undefined);
}

/**
 * What this run created and is still on the servers (checked at the end). Only
 * its own names: another comparison running beside it (a test's `--tiny` run, a
 * colleague's) has schemas and keys of its own that are not leftovers.
 */
export async function leftovers(): Promise<string[]> {
  const found: string[] = [];
  if (createdSchemas.size) {
    const schemas = await withAdmin((c) => c.query<{ n: string }>(`SELECT nspname AS n FROM pg_namespace WHERE nspname = ANY($1::text[])`, [[...createdSchemas]])).catch(() => ({ rows: [] as Array<{ n: string }> }));
    found.push(...schemas.rows.map((r) => `schema ${r.n}`));
  }
  if (!createdPrefixes.size) return found;
  const redis = redisClient();
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    for (const prefix of createdPrefixes) {
      let cursor = '0';
      let count = 0;
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 10_000);
        cursor = next;
        count += keys.length;
      } while (cursor !== '0');
      if (count) found.push(`${count} Redis keys under ${prefix}:`);
    }
  } catch {
    /* unreachable Redis was reported already */
  } finally {
    redis.disconnect();
  }
  return found;
}

async function checkPostgres(): Promise<string> {
  try {
    return await withAdmin(async (c) => (await c.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v);
  } catch (error) {
    const e = error as Error & { code?: string };
    throw new Error(`PostgreSQL at ${postgresUrl.replace(/:[^:@/]*@/, ':***@')} does not answer (${e.code ? `${e.code}: ` : ''}${e.message}); start it or set BATON_BENCH_DATABASE_URL`);
  }
}

export async function checkRedis(): Promise<string> {
  const redis = redisClient();
  let cause: Error | undefined;
  redis.on('error', (error: Error) => (cause = error));
  try {
    await redis.connect();
    const info = await redis.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
  } catch (error) {
    throw new Error(`Redis at ${REDIS.host}:${REDIS.port} does not answer (${cause?.message ?? (error as Error).message}); start it or set BATON_BENCH_REDIS_HOST/PORT`);
  } finally {
    redis.disconnect();
  }
}

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * Baton's fixtures load `baton-jobs` from dist/ (`built`, as an installed package does):
 * refuses a dist/ missing or older than a file of src/, which would measure other code
 * than this tree's.
 * @throws Error naming the remedy (`npm run build`; `npm run bench:compare` runs it)
 */
export function checkBuilt(): void {
  const built = statSync(join(REPO, 'dist/index.js'), { throwIfNoEntry: false })?.mtimeMs;
  const newest = Math.max(...readdirSync(join(REPO, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs));
  if (built === undefined || built < newest) {
    throw new Error(`dist/ is ${built === undefined ? 'missing' : 'older than src/'}: Baton runs from its build here, as installed; run \`npm run build\` (\`npm run bench:compare\` does)`);
  }
}

function batonSystem(driver: BenchDriver, version: string): System {
  return {
    name: `baton ${driver.name}`,
    baton: true,
    driver: driver.name,
    version,
    check: async () => {
      checkBuilt();
      await driver.check();
    },
    options: () => [
      `${driver.description}; ${driver.wakeUps}`,
      `worker: default options except concurrency and prefetch = concurrency (its throughput option: jobs claimed ahead of a free slot; not in W5/W6) (pollInterval 1000 ms, watchInterval 10 ms, cancelPollInterval 200 ms, leaseTtl 30 s, rescueInterval 1 s); W5: drainTimeout 0 (hand-off on SIGTERM, its documented setting); W6 short lease: leaseTtl ${SHORT_LEASE_MS} ms`,
      `W7: each of the three workers declares defineSchedule('${BATON_SCHEDULE.name}', { every: ${BATON_SCHEDULE.every}, task: tick }) in its \`schedules\` (upserted at start, default catchUp 'latest'); a tick is keyed by the job's scheduledFor`,
    ],
    async namespace() {
      const db = await driver.createDatabase('compare');
      return { config: { database: db.url }, drop: () => db.drop() };
    },
    async enqueueBulk(ns, count, batch) {
      const baton = await openClient(ns.config.database as string);
      try {
        return await enqueueInBatches(baton, 'noop', count, batch);
      } finally {
        await baton.close();
      }
    },
    worker(ns, spec) {
      const config = {
        ...ns.config,
        worker: batonWorkerOptions(spec.concurrency, spec.variant),
        ...(spec.expect !== undefined ? { expect: spec.expect } : {}),
        ...(spec.schedule ? { schedule: BATON_SCHEDULE } : {}),
      };
      return spawnFixture('worker.ts', config, { name: `${this.name} ${spec.name}`, built: true });
    },
    client(ns) {
      return spawnFixture('client.ts', ns.config, { name: `${this.name} client`, built: true });
    },
  };
}

const graphileLogger = new Logger(() => () => undefined);

const graphile: System = {
  name: 'graphile-worker',
  baton: false,
  version: '0.17.3',
  check: async () => void (await checkPostgres()),
  options: () => [`W2 c10: ${graphileOptions(10).text}`, `W2 c50: localQueue.size ${graphileOptions(50).run.preset.worker.localQueue.size}, otherwise the same; W6: no lease setting exists (4 h lock timeout), the short-lease row is not run`, 'cancel: no cancel of a running job; permanentlyFailJobs/completeJobs skip locked (running) jobs'],
  async namespace() {
    const schema = `cmp_gw_${hex()}`;
    trackSchema(schema);
    createdSchemas.add(schema);
    const utils: WorkerUtils = await makeWorkerUtils({ connectionString: postgresUrl, schema, logger: graphileLogger });
    await utils.migrate();
    return {
      config: { connectionString: postgresUrl, schema, utils },
      drop: async () => {
        await Promise.resolve().then(() => utils.release()).catch(() => undefined);
        await dropSchema(schema);
      },
    };
  },
  async enqueueBulk(ns, count, batch) {
    const utils = ns.config.utils as WorkerUtils;
    const started = performance.now();
    for (let from = 0; from < count; from += batch) {
      const specs = [];
      for (let i = from; i < Math.min(count, from + batch); i++) specs.push({ identifier: 'noop', payload: { i } });
      await utils.addJobs(specs);
    }
    return performance.now() - started;
  },
  worker(ns, spec) {
    return peerChild('graphile.ts', { role: 'worker', connectionString: ns.config.connectionString, schema: ns.config.schema, ...spec }, `graphile-worker ${spec.name}`);
  },
  client(ns) {
    return peerChild('graphile.ts', { role: 'client', connectionString: ns.config.connectionString, schema: ns.config.schema, tasks: [], concurrency: 0 }, 'graphile-worker client');
  },
};

const pgBoss: System = {
  name: 'pg-boss',
  baton: false,
  version: '10.4.2',
  check: async () => void (await checkPostgres()),
  options: () => [
    `W2 c10 / c50: ${pgBossWorkerOptions(10).text.replace('batchSize 10', 'batchSize = concurrency').replace(/up to 10/, 'up to that many')}`,
    `W6 short lease: pg-boss has no heartbeat; a job's expireInSeconds must outlast the 20 s job, so ${PG_BOSS_SHORT_EXPIRE_SECONDS} s, with maintenanceIntervalSeconds 1 (its minimum); default expiry 15 min, maintenance every 120 s`,
    'W7: schedule() takes 5-field cron (one run a minute at most), cronMonitorIntervalSeconds 1 / cronWorkerIntervalSeconds 1; cancel(name, id) marks the job cancelled but the running handler gets no signal',
  ],
  async namespace() {
    const schema = `cmp_pgb_${hex()}`;
    trackSchema(schema);
    createdSchemas.add(schema);
    const boss = new PgBoss({ connectionString: postgresUrl, schema, supervise: false, schedule: false, max: 4 });
    boss.on('error', () => undefined);
    await boss.start();
    for (const name of TASKS) await boss.createQueue(name);
    return {
      config: { connectionString: postgresUrl, schema, boss },
      drop: async () => {
        await boss.stop({ graceful: false, close: true, wait: true }).catch(() => undefined);
        await dropSchema(schema);
      },
    };
  },
  async enqueueBulk(ns, count, batch) {
    const boss = ns.config.boss as PgBoss;
    const started = performance.now();
    for (let from = 0; from < count; from += batch) {
      const jobs = [];
      for (let i = from; i < Math.min(count, from + batch); i++) jobs.push({ name: 'noop', data: { i } });
      await boss.insert(jobs);
    }
    return performance.now() - started;
  },
  worker(ns, spec) {
    return peerChild('pgboss.ts', { role: 'worker', connectionString: ns.config.connectionString, schema: ns.config.schema, ...spec }, `pg-boss ${spec.name}`);
  },
  client(ns, variant) {
    return peerChild('pgboss.ts', { role: 'client', connectionString: ns.config.connectionString, schema: ns.config.schema, tasks: [], concurrency: 0, variant }, 'pg-boss client');
  },
};

const bullmq: System = {
  name: 'bullmq',
  baton: false,
  version: '6.7.0',
  check: async () => void (await checkRedis()),
  options: () => [`W2 c10 / c50: ${bullmqWorkerOptions(10).text.replace('concurrency 10', 'concurrency = the workload’s')}`, `W6 short lease: ${bullmqWorkerOptions(10, 'short-lease').text.replace('concurrency 10, ', '')}`, 'cancel from another process: Relay topic → worker.cancelJob(id) (the documented pattern), handler throws UnrecoverableError so the job is recorded failed', 'W7: queue.upsertJobScheduler(id, { every: 1000 }) from each of the three processes'],
  async namespace() {
    const prefix = `cmp-${hex()}`;
    livePrefixes.add(prefix);
    createdPrefixes.add(prefix);
    const queue = new Queue('bench', { connection: { ...REDIS, maxRetriesPerRequest: null }, prefix });
    await queue.waitUntilReady();
    return {
      config: { redis: REDIS, prefix, queue },
      drop: async () => {
        await queue.close().catch(() => undefined);
        await deleteKeys(prefix);
      },
    };
  },
  async enqueueBulk(ns, count, batch) {
    const queue = ns.config.queue as Queue;
    const started = performance.now();
    for (let from = 0; from < count; from += batch) {
      const jobs = [];
      for (let i = from; i < Math.min(count, from + batch); i++) jobs.push({ name: 'noop', data: { i } });
      await queue.addBulk(jobs);
    }
    return performance.now() - started;
  },
  worker(ns, spec) {
    return peerChild('bullmq.ts', { role: 'worker', redis: ns.config.redis, prefix: ns.config.prefix, ...spec }, `bullmq ${spec.name}`);
  },
  client(ns) {
    return peerChild('bullmq.ts', { role: 'client', redis: ns.config.redis, prefix: ns.config.prefix, tasks: [], concurrency: 0 }, 'bullmq client');
  },
};

/** Every system, in the interleaving order. */
export function allSystems(batonVersion: string): System[] {
  return [batonSystem(sqliteDriver, batonVersion), batonSystem(postgresDriver, batonVersion), graphile, pgBoss, bullmq];
}
