/**
 * What only the PostgreSQL driver does: transactional enqueue inside the caller's
 * transaction (woken at commit by NOTIFY), surviving a terminated LISTEN connection
 * and terminated pool connections, C22's PostgreSQL-specific payload cases (NUL
 * refused before the driver; numbers, nesting and a large string round-trip
 * exactly), and schema isolation. Connections of one test are found in
 * `pg_stat_activity` by an `application_name` of their own, set through the URL.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, NotFoundError, StoreError, ValidationError, createBaton, defineTask, type Baton, type Job, type Worker } from 'baton-jobs';
import { canonicalJson, createKit, sha256 } from '../fixtures/kit.js';
import { inOtherProcess, listFullJobs } from '../helpers/client.js';
import { BACKGROUND_OPS, openBaton, postgresUrl, tempDatabase, testLogger } from '../helpers/db.js';
import { collectEvents, until, waitForEvent } from '../helpers/events.js';
import { Ledger } from '../helpers/ledger.js';
import { rawQuery } from '../helpers/raw.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A pg.Client on the test server, ended after the test. */
async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  cleanups.push(() => client.end().catch(() => undefined));
  return client;
}

/** Runs one query on a fresh connection (never one of Baton's). */
async function adminQuery<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/**
 * A Baton on a fresh schema whose connections carry their own `application_name`,
 * a logger that keeps every line at warn and above, the kit with a ledger, and a
 * started worker (`pollInterval` an hour unless given: wake-ups must come from NOTIFY,
 * so a job done before the test times out proves one came).
 */
async function setup(workerOptions: Record<string, unknown> = {}, observer?: Parameters<typeof openBaton>[1]) {
  const db = tempDatabase();
  const app = `baton_test_${randomBytes(4).toString('hex')}`;
  const url = new URL(db.url);
  url.searchParams.set('application_name', app);
  const logs: Array<{ level: number; msg: string; where?: string }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) });
  const ledger = new Ledger(join(db.dir, 'ledger.db'));
  cleanups.push(() => ledger.close());
  const kit = createKit({ ledgerPath: ledger.path });
  cleanups.push(() => kit.ledger!.close());
  const baton = await openBaton({ database: url.toString(), logger }, observer);
  const worker = baton.worker({ tasks: [...kit.tasks, nulResult], pollInterval: 3_600_000, ...workerOptions });
  await worker.start();
  return { db, url: url.toString(), app, logs, ledger, kit, baton, worker };
}

/** The backends of one test's Baton (pool and LISTEN connections). */
const backendsOf = (app: string) =>
  adminQuery<{ pid: number; query: string; state: string }>('SELECT pid, query, state FROM pg_stat_activity WHERE application_name = $1', [app]);

/**
 * Its LISTEN connection, once it has subscribed to both channels (the cancel channel
 * is LISTENed last; the first connection then LISTENs and UNLISTENs a probe channel).
 */
async function listenBackend(app: string, other?: number): Promise<number> {
  const subscribed = /^(LISTEN ".*_done"|LISTEN "baton_probe_\w+"|UNLISTEN "baton_probe_\w+")$/;
  const backend = await until(async () => (await backendsOf(app)).find((b) => subscribed.test(b.query) && b.state === 'idle' && b.pid !== other), 'the LISTEN connection is subscribed');
  return backend!.pid;
}

/** Returns a handler's result for one job (subscribed before the enqueue). */
async function roundTrip(baton: Baton, worker: Worker, enqueue: () => Promise<{ id: number }>): Promise<{ job: Job; result: unknown }> {
  const results = new Map<number, unknown>();
  let wake = () => undefined as void;
  const offs = [
    worker.on('job:completed', (e) => (results.set(e.job.id, { result: e.result }), wake())),
    worker.on('job:failed', (e) => (results.set(e.job.id, { failed: e.message }), wake())),
  ];
  try {
    const job = await enqueue();
    const outcome = await new Promise<{ result?: unknown; failed?: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for job ${job.id}`)), 60_000);
      wake = () => {
        if (!results.has(job.id)) return;
        clearTimeout(timer);
        resolve(results.get(job.id) as { result?: unknown });
      };
      wake();
    });
    if (outcome.failed !== undefined) throw new Error(`job ${job.id} failed: ${outcome.failed}`);
    return { job: await baton.getJob(job.id), result: outcome.result };
  } finally {
    for (const off of offs) off();
  }
}

/** A handler whose result PostgreSQL could not store (a NUL character). */
const nulResult = defineTask('nulResult', { handler: async () => ({ s: 'x\u0000y' }) });

describe('transactional enqueue ({ client }) inside the caller\'s transaction', () => {
  it('BEGIN … ROLLBACK: the job never exists and no worker runs anything', async () => {
    const { baton, worker, kit, ledger } = await setup();
    const claimed: number[] = [];
    worker.on('job:claimed', (e) => claimed.push(e.job.id));
    const client = await connect();

    await client.query('BEGIN');
    const job = await baton.enqueue(kit.hash, { n: 1 }, { client });
    const many = await baton.enqueueMany([{ task: kit.hash, payload: { n: 2 } }, { task: kit.hash, payload: { n: 3 } }], { client });
    expect(job.state).toBe('queued');
    expect(many).toHaveLength(2);
    await client.query('ROLLBACK');

    for (const id of [job.id, ...many.map((j) => j.id)]) await expect(baton.getJob(id)).rejects.toBeInstanceOf(NotFoundError);
    // A control job enqueued afterwards is run: the worker was awake and saw nothing else.
    const control = await baton.enqueue(kit.hash, { control: true });
    await waitForEvent(worker, 'job:completed', (e) => e.job.id === control.id);
    expect(claimed).toEqual([control.id]);
    expect((await baton.listJobs()).map((j) => j.id)).toEqual([control.id]);
    expect(ledger.rows().map((r) => r.jobId)).toEqual([control.id]);
  });

  it('BEGIN … COMMIT: invisible to other connections until COMMIT; the commit wakes a worker whose poll is a minute away', async () => {
    const { db, baton, worker, kit } = await setup();
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 1 });
    cleanups.push(() => pool.end());
    const client = await pool.connect(); // a pool client works as well as a Client
    cleanups.push(() => client.release());

    await client.query('BEGIN');
    const job = await baton.enqueue(kit.hash, { n: 1 }, { client });
    const many = await baton.enqueueMany([{ task: kit.hash, payload: { n: 2 } }, { task: kit.hash, payload: { n: 3 } }], { client });
    const ids = [job.id, ...many.map((j) => j.id)];
    // Not visible outside the transaction: not to Baton's pool, not to a raw connection.
    await expect(baton.getJob(job.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(await baton.listJobs()).toEqual([]);
    expect(await rawQuery(db, 'SELECT id FROM jobs_all')).toEqual([]);
    // Visible inside it.
    expect((await client.query(`SELECT count(*)::int AS n FROM "${new URL(db.url).searchParams.get('schema')}".jobs_all`)).rows[0]).toEqual({ n: 3 });

    const completed = collectEvents(worker, 'job:completed', 3, (e) => ids.includes(e.job.id));
    await client.query('COMMIT');
    const events = await completed;
    expect(events.map((e) => e.job.id).sort((a, b) => a - b)).toEqual(ids);
    for (const [i, id] of ids.entries()) {
      const done = await baton.getJob(id);
      expect(done.state).toBe('completed');
      expect(done.result).toBe(sha256(canonicalJson({ n: i + 1 })));
    }
  });

  it('a refused payload inside the transaction throws before any write and leaves the transaction usable', async () => {
    const calls: string[] = [];
    const { baton, kit, db } = await setup({}, (op) => void (BACKGROUND_OPS.has(op) || calls.push(op)));
    const client = await connect();
    await client.query('BEGIN');
    calls.length = 0;
    const error = await baton.enqueue(kit.hash, { s: 'a\u0000b' }, { client }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(calls).toEqual([]);
    // The caller's transaction is not aborted: it can go on and commit.
    const ok = await baton.enqueue(kit.hash, { s: 'ab' }, { client });
    await client.query('COMMIT');
    expect((await rawQuery<{ id: string }>(db, 'SELECT id FROM jobs_all')).map((r) => Number(r.id))).toEqual([ok.id]);
  });
});

describe('connections terminated by the server', () => {
  it('LISTEN connection terminated: the worker logs, reconnects, and is still woken by another process; no crash, no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(() => process.off('unhandledRejection', onUnhandled));
    const { url, app, logs, worker } = await setup();

    const first = await listenBackend(app);
    const terminated = await adminQuery<{ ok: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND pid = $2',
      [app, first],
    );
    expect(terminated).toEqual([{ ok: true }]);
    await until(() => logs.some((l) => l.where === 'listen' && /connection lost/.test(l.msg)), 'the worker logged the lost LISTEN connection');
    const second = await listenBackend(app, first);
    expect(second).not.toBe(first);

    for (const n of [1, 2]) {
      const completed = waitForEvent(worker, 'job:completed', (e) => (e.job.payload as { n?: number }).n === n);
      const answer = await inOtherProcess({ database: url, op: 'enqueue', task: 'hash', payload: { n } });
      expect(answer.type).toBe('result');
      // Done long before the hour-long poll: NOTIFY woke the worker (no speed claim).
      await completed;
    }
    expect(unhandled).toEqual([]);
  });

  it('every pool and LISTEN connection terminated while jobs run: handlers go on, the jobs complete on attempt 1, the worker keeps working', async () => {
    // Leases far longer than any reconnection on a busy machine: the point is that the
    // handlers go on, not how fast the pool comes back.
    const { db, app, url, logs, baton, worker, kit, ledger } = await setup({ concurrency: 5, leaseTtl: 60_000, heartbeatInterval: 300, pollInterval: 500 });
    const lost: number[] = [];
    worker.on('lease:lost', (e) => lost.push(e.job.id));
    const completedIds: number[] = [];
    worker.on('job:completed', (e) => completedIds.push(e.job.id));
    await listenBackend(app);

    const claimed = collectEvents(worker, 'job:claimed', 5);
    // The handlers run until the test opens their gate, after the cut.
    const gate = join(db.dir, 'gate');
    const jobs = await baton.enqueueMany(Array.from({ length: 5 }, () => ({ task: kit.gated, payload: { path: gate } })));
    await claimed;
    await until(() => ledger.rows().length === 5, 'all five handlers started');
    const backends = await backendsOf(app);
    expect(backends.length).toBeGreaterThanOrEqual(2); // at least the LISTEN connection and one pool connection
    const terminated = await adminQuery<{ ok: boolean }>('SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1', [app]);
    expect(terminated.length).toBe(backends.length);
    expect(completedIds).toEqual([]); // the cut landed while all five ran
    writeFileSync(gate, '');

    // This test's own reads share the cut pool: one may draw a connection the server has
    // just terminated before the pool has seen it go (the worker retries its writes; a
    // read here is tried again at the next poll).
    const done = await until(async () => {
      const all = await Promise.all(jobs.map((j) => baton.getJob(j.id))).catch((error: unknown) => {
        if (/terminating connection due to administrator command/.test(String((error as Error).message))) return undefined;
        throw error;
      });
      return all?.every((j) => j.state === 'completed') ? all : undefined;
    }, 'all five jobs completed');
    for (const job of done!) {
      expect(job.attempt).toBe(1);
      expect(job.errors).toEqual([]);
      expect(job.result).toEqual({ opened: true });
    }
    expect(lost).toEqual([]);
    const rows = ledger.rows();
    expect(rows).toHaveLength(5);
    expect(rows.every((r) => r.finishedAt !== null)).toBe(true);
    expect(logs.some((l) => /connection lost/.test(l.msg))).toBe(true);

    // The worker goes on: another process's job is still picked up (LISTEN reconnected).
    const next = waitForEvent(worker, 'job:completed', (e) => (e.job.payload as { after?: boolean }).after === true);
    await inOtherProcess({ database: url, op: 'enqueue', task: 'hash', payload: { after: true } });
    await next;
  });
});

describe('C22 on PostgreSQL: payloads and results the database must keep exactly', () => {
  it('a NUL character is refused with a ValidationError before the driver sees it: no row', async () => {
    const calls: string[] = [];
    const { baton, kit, db } = await setup({}, (op) => void (BACKGROUND_OPS.has(op) || calls.push(op)));
    calls.length = 0;
    for (const payload of [{ s: 'a\u0000b' }, { ['k\u0000']: 1 }, { deep: [{ x: ['\u0000'] }] }]) {
      const error = await baton.enqueue(kit.hash, payload).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).not.toBeInstanceOf(StoreError);
      expect((error as ValidationError).message).toMatch(/NUL/);
    }
    expect(calls).toEqual([]);
    expect(await rawQuery(db, 'SELECT id FROM jobs_all')).toEqual([]);
  });

  it('a handler result with a NUL character fails the job with a clear, non-retryable error, not a driver error; the worker goes on', async () => {
    const { baton, worker, kit } = await setup();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(nulResult, undefined, { maxAttempts: 3 });
    const event = await failed;
    expect(event.job.id).toBe(job.id);
    expect(event.retryAt).toBeNull();
    const stored = await baton.getJob(job.id);
    expect(stored.state).toBe('failed');
    expect(stored.attempt).toBe(1);
    expect(stored.errors[0]!.message).toMatch(/invalid result.*NUL/);
    const { result } = await roundTrip(baton, worker, () => baton.enqueue(kit.hash, { control: 1 }));
    expect(result).toBe(sha256(canonicalJson({ control: 1 })));
  });

  it('extreme numbers, deep nesting and a 900 KiB string round-trip exactly (handler hash = client hash)', async () => {
    const { baton, worker, kit, db } = await setup();
    let nested: unknown = { leaf: 'bottom' };
    for (let i = 0; i < 1000; i++) nested = i % 2 ? { a: nested } : [nested];
    const unit = 'abcé😀שלום'; // 17 UTF-8 bytes
    const big = unit.repeat(Math.floor((900 * 1024) / 17));
    const cases: Array<[string, unknown]> = [
      ['numbers', { max: 1e308, maxValue: Number.MAX_VALUE, min: 5e-324, negZero: -0, sum: 0.1 + 0.2, negative: -1.5e-300, safe: 2 ** 53 - 1, arr: [1e21, 1e-7, -0] }],
      ['nested', nested],
      ['900 KiB', { s: big }],
    ];
    for (const [label, payload] of cases) {
      const expected = sha256(canonicalJson(payload));
      const { job, result } = await roundTrip(baton, worker, () => baton.enqueue(kit.hash, payload));
      expect(result, label).toBe(expected);
      expect(job.result, label).toBe(expected);
      expect(sha256(canonicalJson(job.payload)), label).toBe(expected);
    }
    // Stored as written: no numeric normalisation (0.30000000000000004 stays, 1e308 stays finite).
    const [row] = await rawQuery<{ sum: string; max: string }>(db, "SELECT payload->>'sum' AS sum, payload->>'max' AS max FROM jobs_all WHERE payload->>'sum' IS NOT NULL");
    expect(Number(row!.sum)).toBe(0.1 + 0.2);
    expect(Number(row!.max)).toBe(1e308);
    const [stored] = await rawQuery<{ chars: number; bytes: number }>(db, "SELECT char_length(payload->>'s') AS chars, octet_length(payload->>'s') AS bytes FROM jobs_all WHERE payload->>'s' IS NOT NULL");
    expect(stored).toEqual({ chars: [...big].length, bytes: Buffer.byteLength(big) });
  });
});

describe('schemas', () => {
  it('two Batons on different schemas of one database do not see each other\'s jobs', async () => {
    const a = await openBaton({ database: tempDatabase().url });
    const b = await openBaton({ database: tempDatabase().url });
    const kit = createKit();
    const jobA = await a.enqueue(kit.hash, { from: 'a' });
    const workerB = b.worker({ tasks: kit.tasks, pollInterval: 60_000 });
    const claimedB: unknown[] = [];
    workerB.on('job:claimed', (e) => claimedB.push(e.job.payload));
    await workerB.start();
    const completed = waitForEvent(workerB, 'job:completed');
    const jobB = await b.enqueue(kit.hash, { from: 'b' });
    expect((await completed).job.id).toBe(jobB.id);
    expect(claimedB).toEqual([{ from: 'b' }]);
    expect((await listFullJobs(a)).map((j) => j.payload)).toEqual([{ from: 'a' }]);
    expect((await listFullJobs(b)).map((j) => j.payload)).toEqual([{ from: 'b' }]);
    expect((await a.getJob(jobA.id)).state).toBe('queued');
  });

  it('an invalid schema name in the URL → ConfigError, and nothing is created', async () => {
    for (const schema of ['Bad-Name', 'x";drop schema public;--', '1abc', 'a'.repeat(64), 'pg_catalog', 'pg_baton', 'information_schema']) {
      const url = new URL(postgresUrl);
      url.searchParams.set('schema', schema);
      const error = await createBaton({ database: url.toString(), logger: testLogger() }).catch((e: unknown) => e);
      expect(error, schema).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).code).toBe('config');
      expect((error as Error).message).toMatch(/schema name/);
      if (!schema.startsWith('pg_') && schema !== 'information_schema') expect(await adminQuery('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).toEqual([]);
    }
  });

  it('?schema= given twice → ConfigError naming it (it used to take the first silently)', async () => {
    const url = new URL(postgresUrl);
    url.searchParams.append('schema', 'twice_a');
    url.searchParams.append('schema', 'twice_b');
    const error = await createBaton({ database: url.toString(), logger: testLogger() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/more than once/);
    expect(await adminQuery("SELECT 1 FROM pg_namespace WHERE nspname IN ('twice_a', 'twice_b')")).toEqual([]);
  });
});
