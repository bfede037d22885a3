/**
 * PgBouncer in transaction pooling mode (docs/postgres.md, "Connections and
 * PgBouncer"): each test starts Debian's pgbouncer (1.18) in front of the test
 * server, with fewer server connections than the Batons' pools hold, so
 * consecutive statements of one client land on different server connections —
 * what breaks a named prepared statement or a session setting. The Batons go
 * through it with `?pgbouncer=true` and reach PostgreSQL directly (directDatabase)
 * only for LISTEN and migrations. Two Batons on one schema stand for two processes:
 * each has its own pool and its own LISTEN connection.
 */
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CancelledError, defineSchedule, defineTask, type Baton, type JobContext } from 'baton-jobs';
import { openBaton, postgresUrl, tempDatabase, tempDir } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';
import { pgbouncerInstalled, startPgBouncer } from '../helpers/pgbouncer.js';
import { churn, CHURN, statsUntil, vacuumUntil } from '../conformance/table-health.js';
import { PgListener, PROBE_TIMEOUT_MS } from '../../src/store/postgres/listener.js';
import { listFullJobs } from '../helpers/client.js';

/** Never polls: a worker sees other instances' enqueues and cancels only through LISTEN. */
const PUSH_ONLY = { pollInterval: 600_000, cancelPollInterval: 600_000 };

const echo = defineTask('pgb-echo', { handler: async (payload: { n: number }) => ({ n: payload.n }) });

/** Waits for its signal, then throws the abort reason: records what it saw in `seen`. */
function waiter(seen: unknown[]) {
  return defineTask('pgb-wait', {
    handler: async (_payload: null, ctx: JobContext) => {
      if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      seen.push(ctx.signal.reason);
      throw ctx.signal.reason;
    },
  });
}

/** A bouncer with 2 server connections and `open()` for Batons through it on a fresh schema (pool of 4 each). */
async function throughBouncer() {
  const bouncer = await startPgBouncer(postgresUrl, { poolSize: 2 });
  const schema = new URL(tempDatabase().url).searchParams.get('schema')!;
  const database = `${bouncer.url}?schema=${schema}&pgbouncer=true&pool_size=4`;
  const open = (options: { readOnly?: boolean } = {}) => openBaton({ database, directDatabase: postgresUrl, ...options });
  return { bouncer, schema, database, open };
}

/** Closes the Batons (workers first) while the bouncer still runs. */
const closeAll = (...batons: Baton[]) => Promise.all(batons.map((b) => b.close()));

/** Server connections behind the bouncer, each pinned by an open transaction: their setting and prepared statements. */
async function serverSessions(bouncerUrl: string, count: number) {
  const clients = Array.from({ length: count }, () => new pg.Client({ connectionString: bouncerUrl }));
  try {
    await Promise.all(clients.map((c) => c.connect()));
    await Promise.all(clients.map((c) => c.query('BEGIN')));
    return await Promise.all(clients.map(async (c) => (await c.query<{ pid: number; sc: string; prepared: number }>(
      "SELECT pg_backend_pid() AS pid, current_setting('synchronous_commit') AS sc, (SELECT count(*) FROM pg_prepared_statements)::int AS prepared")).rows[0]!));
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }
}

describe.skipIf(!pgbouncerInstalled && process.env.CI !== 'true')('through PgBouncer in transaction pooling mode', () => {
  it('migrates through the direct URL; enqueues from another instance wake the worker by LISTEN; every job is claimed and completed; no prepared statement or session setting is left on the server connections', async () => {
    const { bouncer, schema, open } = await throughBouncer();
    const a = await open();
    const b = await open();
    const migrated = await new pg.Client({ connectionString: postgresUrl });
    await migrated.connect();
    const versions = (await migrated.query(`SELECT version FROM "${schema}".baton_migrations ORDER BY version`)).rows.map((r) => r.version);
    await migrated.end();
    expect(versions.length).toBeGreaterThan(0);

    const worker = a.worker({ tasks: [echo], concurrency: 4, ...PUSH_ONLY });
    await worker.start();
    const completed = collectEvents(worker, 'job:completed', 40);
    // Enqueued by the other instance, in several transactions: only the NOTIFY can wake the worker.
    for (let i = 0; i < 4; i++) await b.enqueueMany(Array.from({ length: 10 }, (_, j) => ({ task: echo, payload: { n: i * 10 + j } })));
    const events = await completed;
    expect(new Set(events.map((e) => e.job.id)).size).toBe(40);
    const jobs = await listFullJobs(b, { limit: 100 });
    expect(jobs.map((j) => j.state)).toEqual(Array(40).fill('completed'));
    expect(jobs.map((j) => (j.result as { n: number }).n).sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i));

    const sessions = await serverSessions(bouncer.url, 2);
    expect(new Set(sessions.map((s) => s.pid)).size).toBe(2);
    for (const s of sessions) expect(s).toMatchObject({ sc: 'on', prepared: 0 });
    await closeAll(a, b);
  });

  it('a cancel from another instance reaches the running handler through the direct LISTEN connection', async () => {
    const { open } = await throughBouncer();
    const a = await open();
    const b = await open();
    const seen: unknown[] = [];
    const wait = waiter(seen);
    const worker = a.worker({ tasks: [wait], ...PUSH_ONLY });
    await worker.start();
    const started = waitForEvent(worker, 'job:claimed');
    const job = await a.enqueue(wait, null);
    await started;
    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === job.id);
    expect((await b.cancel(job.id, 'from b')).outcome).toBe('requested');
    await cancelled;
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(CancelledError);
    expect((await b.getJob(job.id)).state).toBe('cancelled');
    await closeAll(a, b);
  });

  it('a schedule ticks: the tick is enqueued (compare-and-set and insert in one transaction) and run', async () => {
    const { open } = await throughBouncer();
    const a = await open();
    const worker = a.worker({ tasks: [echo], schedules: [defineSchedule('pgb-every-second', { every: 1000, task: echo, payload: { n: 7 } })] });
    const ran = waitForEvent(worker, 'job:completed', (e) => e.job.task === echo.name);
    await worker.start();
    const { job } = await ran;
    expect((await a.getJob(job.id)).result).toEqual({ n: 7 });
    await closeAll(a);
  });

  it('the table vacuum reads the statistics through the bouncer and runs VACUUM (SKIP_LOCKED) on a connection of its own to the direct URL, not through the few server connections of the bouncer', async () => {
    const { open } = await throughBouncer();
    const a = await open();
    await churn(a.store);
    expect((await statsUntil(a.store, (s) => s.deadRows >= CHURN)).deadRows).toBeGreaterThanOrEqual(CHURN);
    expect((await vacuumUntil(a.store, (s) => s.deadRows < CHURN)).deadRows).toBeLessThan(CHURN);
    await closeAll(a);
  });

  it('hand-off on shutdown: a stopping worker releases its running job and a worker of the other instance completes it', async () => {
    const { open } = await throughBouncer();
    const a = await open();
    const b = await open();
    const seen: unknown[] = [];
    const wait = waiter(seen);
    const first = a.worker({ tasks: [wait], drainTimeout: 0, ...PUSH_ONLY });
    await first.start();
    const started = waitForEvent(first, 'job:claimed');
    const job = await a.enqueue(wait, null);
    await started;
    const summary = await first.stop();
    expect(summary).toMatchObject({ released: 1, unreleased: [] });
    expect(await b.getJob(job.id)).toMatchObject({ state: 'queued', attempt: 0 });

    // The next run completes: the handler is one that returns.
    const finish = defineTask('pgb-wait', { handler: async () => 'done' });
    const second = b.worker({ tasks: [finish] });
    const done = waitForEvent(second, 'job:completed', (e) => e.job.id === job.id);
    await second.start();
    await done;
    expect(await b.getJob(job.id)).toMatchObject({ state: 'completed', attempt: 1, result: 'done' });
    await closeAll(a, b);
  });
});

describe.skipIf(!pgbouncerInstalled && process.env.CI !== 'true')('through PgBouncer, configured by the environment and read-only', () => {
  it('BATON_DIRECT_DATABASE_URL is the direct URL when no directDatabase is given (what the CLI reads)', async () => {
    const { database } = await throughBouncer();
    process.env.BATON_DIRECT_DATABASE_URL = postgresUrl;
    let baton: Baton;
    try {
      baton = await openBaton({ database });
    } finally {
      delete process.env.BATON_DIRECT_DATABASE_URL;
    }
    const worker = baton.worker({ tasks: [echo] });
    const done = waitForEvent(worker, 'job:completed');
    await worker.start();
    const job = await baton.enqueue(echo, { n: 3 });
    expect((await done).job.id).toBe(job.id);
    await closeAll(baton);
  });

  it('reads through the direct URL (PgBouncer refuses its read-only start setting) and refuses writes with StoreError', async () => {
    const { open } = await throughBouncer();
    const writer = await open();
    const job = await writer.enqueue(echo, { n: 1 });
    const reader = await open({ readOnly: true });
    expect((await reader.getJob(job.id)).payload).toEqual({ n: 1 });
    await expect(reader.enqueue(echo, { n: 2 })).rejects.toThrow(/read-only transaction/);
    expect(await writer.listJobs()).toHaveLength(1);
    await closeAll(writer, reader);
  });
});

describe('pgbouncer=true settings', () => {
  it('without a direct URL: ConfigError naming directDatabase, before any connection', async () => {
    const database = `${postgresUrl}?pgbouncer=true`;
    await expect(openBaton({ database })).rejects.toThrow(/pgbouncer=true.*directDatabase/);
  });

  it('bad ?pool_size= and ?pgbouncer= values, and Baton parameters on the direct URL: ConfigError naming them', async () => {
    await expect(openBaton({ database: `${postgresUrl}?pool_size=0` })).rejects.toThrow(/\?pool_size=0 is not a whole number of connections from 1 to 1000/);
    await expect(openBaton({ database: `${postgresUrl}?pool_size=2.5` })).rejects.toThrow(/\?pool_size=2\.5/);
    await expect(openBaton({ database: `${postgresUrl}?pgbouncer=yes` })).rejects.toThrow(/\?pgbouncer=yes must be true or false/);
    await expect(openBaton({ database: postgresUrl, directDatabase: `${postgresUrl}?schema=x` })).rejects.toThrow(/belong on the database URL/);
    await expect(openBaton({ database: postgresUrl, directDatabase: 'mysql://x' })).rejects.toThrow(/direct database URL "mysql:\/\/x" is not a postgres:\/\/ URL/);
  });

  it('a direct URL given for SQLite is a ConfigError; BATON_DIRECT_DATABASE_URL applies to PostgreSQL URLs only', async () => {
    const database = `sqlite:${tempDir()}/baton.db`;
    await expect(openBaton({ database, directDatabase: postgresUrl })).rejects.toThrow(/applies to PostgreSQL only/);
    process.env.BATON_DIRECT_DATABASE_URL = 'postgres://nobody@127.0.0.1:1/none';
    try {
      const baton = await openBaton({ database });
      await baton.enqueue(echo, { n: 1 });
    } finally {
      delete process.env.BATON_DIRECT_DATABASE_URL;
    }
  });
});

/** A pino logger at warn whose lines land in `lines`, and a wait for the first line matching `pattern`. */
function capturedLogger() {
  const lines: Array<{ msg: string; where?: string }> = [];
  const waiting: Array<{ pattern: RegExp; resolve: (line: { msg: string }) => void }> = [];
  const logger = pino({ level: 'warn' }, {
    write(text: string) {
      const line = JSON.parse(text) as { msg: string };
      lines.push(line);
      for (const w of waiting) if (w.pattern.test(line.msg)) w.resolve(line);
    },
  });
  const waitFor = (pattern: RegExp) => new Promise<{ msg: string }>((resolve) => {
    const seen = lines.find((l) => pattern.test(l.msg));
    if (seen) resolve(seen);
    else waiting.push({ pattern, resolve });
  });
  return { logger, lines, waitFor };
}

describe.skipIf(!pgbouncerInstalled && process.env.CI !== 'true')('a LISTEN or direct URL that cannot work is named', () => {
  it(`the LISTEN probe: a notification from the pool arrives on a connection to PostgreSQL; through PgBouncer it does not, and within ${PROBE_TIMEOUT_MS} ms a ConfigError names the URL`, async () => {
    const bouncer = await startPgBouncer(postgresUrl, { poolSize: 2 });
    const sender = new pg.Pool({ connectionString: bouncer.url, max: 2 });
    const probe = async (channel: string) => void (await sender.query('SELECT pg_notify($1, $2)', [channel, '']));
    const errors: unknown[] = [];
    const direct = new PgListener(postgresUrl, ['baton_probe_test'], { label: 'direct database URL (test)', onNotify: () => undefined, onError: (e) => errors.push(e), probe });
    const pooled = new PgListener(bouncer.url, ['baton_probe_test'], { label: 'direct database URL (bouncer)', onNotify: () => undefined, onError: (e) => errors.push(e), probe });
    try {
      expect(await direct.probed).toBe(true);
      expect(await pooled.probed).toBe(false);
      expect(errors).toHaveLength(1);
      expect(String((errors[0] as Error).message)).toMatch(/^the direct database URL \(bouncer\) does not deliver notifications: .*not a pooler in transaction mode \(PgBouncer\)/);
    } finally {
      await Promise.all([direct.close(), pooled.close()]);
      await sender.end();
    }
  });

  it('a direct URL pointing at PgBouncer: the worker still runs jobs (by polling) and the log says the direct URL delivers no notifications', async () => {
    const { database, bouncer } = await throughBouncer();
    const { logger, waitFor } = capturedLogger();
    const baton = await openBaton({ database, directDatabase: bouncer.url, logger });
    const worker = baton.worker({ tasks: [echo], pollInterval: 200 });
    const done = waitForEvent(worker, 'job:completed');
    await worker.start();
    await baton.enqueue(echo, { n: 1 });
    await done;
    const warning = await waitFor(/does not deliver notifications/);
    expect(warning.msg).toContain(`the direct database URL ${bouncer.url.replace(/\/\/[^@]*@/, '//')} does not deliver notifications`);
    await closeAll(baton);
  });

  it('an unreachable direct URL: createBaton fails naming the direct URL; a PgBouncer URL without pgbouncer=true: the error says to add it', async () => {
    const schema = new URL(tempDatabase().url).searchParams.get('schema')!;
    await expect(openBaton({ database: `${postgresUrl}?schema=${schema}`, directDatabase: 'postgres://postgres:secret@127.0.0.1:1/test' })).rejects.toThrow(
      /^cannot connect to the direct database URL postgres:\/\/127\.0\.0\.1:1\/test \(migrations and LISTEN use it\): .*ECONNREFUSED/,
    );

    // A database URL that does not answer (a PgBouncer that is down) while the direct URL would migrate: refused, named, nothing created.
    const downSchema = new URL(tempDatabase().url).searchParams.get('schema')!;
    await expect(openBaton({ database: `postgres://postgres@127.0.0.1:1/test?schema=${downSchema}&pgbouncer=true`, directDatabase: postgresUrl })).rejects.toThrow(
      /^cannot reach the database: database URL postgres:\/\/127\.0\.0\.1:1\/test: .*ECONNREFUSED/,
    );
    const created = new pg.Client({ connectionString: postgresUrl });
    await created.connect();
    expect((await created.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [downSchema])).rowCount).toBe(0);
    await created.end();

    const { bouncer } = await throughBouncer();
    // Named prepared statements on 4 pool connections over 2 server connections: one clashes soon.
    const baton = await openBaton({ database: `${bouncer.url}?schema=${schema}&pool_size=4`, directDatabase: postgresUrl });
    let failure: unknown;
    for (let round = 0; round < 200 && failure === undefined; round++) {
      await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? baton.listJobs() : baton.enqueue(echo, { n: i })))).catch((error: unknown) => (failure = error));
    }
    expect(String((failure as Error | undefined)?.message)).toMatch(/prepared statement .*: the database URL seems to reach PostgreSQL through a pooler in transaction mode \(PgBouncer\).*add pgbouncer=true/);
    await closeAll(baton);
  });
});

describe.skipIf(!pgbouncerInstalled && process.env.CI !== 'true')('read-only commands with a URL that cannot work', () => {
  it('each error names the URL at fault: a PgBouncer database URL without pgbouncer=true, a direct URL pointing at PgBouncer, an unreachable direct URL', async () => {
    const { bouncer, schema, open } = await throughBouncer();
    await (await open()).close(); // the schema exists
    const hostPort = bouncer.url.replace(/\/\/[^@]*@/, '//');
    await expect(openBaton({ database: `${bouncer.url}?schema=${schema}`, readOnly: true })).rejects.toThrow(
      new RegExp(`^cannot reach the database: database URL ${hostPort.replace(/[.]/g, '\\.')}: unsupported startup parameter: options — this URL reaches PgBouncer`),
    );
    await expect(openBaton({ database: `${bouncer.url}?schema=${schema}&pgbouncer=true`, directDatabase: bouncer.url, readOnly: true })).rejects.toThrow(
      new RegExp(`^cannot reach the database: direct database URL ${hostPort.replace(/[.]/g, '\\.')}: unsupported startup parameter: options — this URL reaches PgBouncer`),
    );
    await expect(openBaton({ database: `${bouncer.url}?schema=${schema}&pgbouncer=true`, directDatabase: 'postgres://postgres@127.0.0.1:1/test', readOnly: true })).rejects.toThrow(
      /^cannot reach the database: direct database URL postgres:\/\/127\.0\.0\.1:1\/test: .*ECONNREFUSED/,
    );
  });
});
