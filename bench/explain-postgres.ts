/**
 * `node --conditions=baton-source --import tsx bench/explain-postgres.ts [--queued N] [--completed N] [--limit N]`
 *
 * EXPLAIN (ANALYZE, BUFFERS) of the PostgreSQL driver's hot statements — the claim
 * (`jobClaim`) and the batched completion (`jobCompleteMany`) — against a jobs
 * table holding 20,000 queued and 20,000 completed no-op jobs, in a schema of its
 * own at BATON_BENCH_DATABASE_URL (dropped at the end).
 *
 * The statements are not copied here: the real `PostgresStore` is called with its
 * pool in a capture mode (nothing reaches the server), so the text and parameters
 * are exactly what the PostgreSQL driver (src/store/postgres/jobs.ts and
 * job-leases.ts) sends today. Each statement is then
 * explained inside a transaction that is rolled back, twice: with a custom plan
 * (the parameters bound, what the first executions of a prepared statement get)
 * and with the generic plan (`plan_cache_mode = force_generic_plan`, what a
 * named prepared statement may switch to after five executions). Both table states
 * are shown: right after the completions (dead row versions and index entries
 * left behind, as during a drain) and after VACUUM ANALYZE.
 */
import { createRequire } from 'node:module';
import pg from 'pg';
import { PostgresStore } from '../src/store/postgres/store.js';
import { postgresDriver } from './lib/drivers.js';
import { enqueueInBatches, openClient } from './lib/seed.js';

const require = createRequire(import.meta.url);
const { prepareValue } = require('pg/lib/utils.js') as { prepareValue: (value: unknown) => unknown };

const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const QUEUED = flag('queued', 20_000);
const COMPLETED = flag('completed', 20_000);
const LIMIT = flag('limit', 10);

interface Captured {
  text: string;
  values: unknown[];
}

/** While set, the store's pool sends nothing: queries are recorded and answered with no rows. */
let capture: Captured[] | undefined;
const originalQuery = pg.Pool.prototype.query;
const originalConnect = pg.Pool.prototype.connect;
const record = (config: unknown, values?: unknown) => {
  const c = typeof config === 'string' ? { text: config, values } : (config as { text: string; values?: unknown[] });
  if (!/^(BEGIN|COMMIT|ROLLBACK)$/i.test(c.text.trim())) capture!.push({ text: c.text, values: (c.values as unknown[] | undefined) ?? [] });
  return Promise.resolve({ rows: [], rowCount: 0 });
};
Object.assign(pg.Pool.prototype, {
  query(this: pg.Pool, ...args: unknown[]) {
    return capture ? record(args[0], args[1]) : (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  },
  connect(this: pg.Pool, ...args: unknown[]) {
    if (!capture) return (originalConnect as (...a: unknown[]) => unknown).apply(this, args);
    return Promise.resolve({ query: record, release: () => undefined });
  },
});

async function captured(fn: () => Promise<unknown>): Promise<Captured> {
  capture = [];
  try {
    await fn();
    if (capture.length !== 1) throw new Error(`expected one statement, the store sent ${capture.length}: ${capture.map((c) => c.text.trim().slice(0, 60)).join(' | ')}`);
    return capture[0]!;
  } finally {
    capture = undefined;
  }
}

const literal = (client: pg.Client, value: unknown) => (value === null || value === undefined ? 'NULL' : client.escapeLiteral(String(prepareValue(value))));

async function explain(client: pg.Client, title: string, statement: Captured): Promise<string> {
  const options = 'ANALYZE, BUFFERS, VERBOSE false';
  let out = `\n### ${title}\n`;
  for (const mode of ['custom', 'generic'] as const) {
    await client.query('BEGIN');
    try {
      let rows: Array<{ 'QUERY PLAN': string }>;
      if (mode === 'custom') {
        rows = (await client.query({ text: `EXPLAIN (${options}) ${statement.text}`, values: statement.values })).rows;
      } else {
        await client.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
        await client.query(`PREPARE explained AS ${statement.text}`);
        rows = (await client.query(`EXPLAIN (${options}) EXECUTE explained(${statement.values.map((v) => literal(client, v)).join(', ')})`)).rows;
      }
      out += `\n${mode} plan:\n\n\`\`\`\n${rows.map((r) => r['QUERY PLAN']).join('\n')}\n\`\`\`\n`;
    } finally {
      await client.query('ROLLBACK');
      if (mode === 'generic') await client.query('DEALLOCATE explained').catch(() => undefined);
    }
  }
  return out;
}

await postgresDriver.check();
const db = await postgresDriver.createDatabase('explain');
const schema = new URL(db.url).searchParams.get('schema')!;
const admin = new pg.Client({ connectionString: db.url.replace(/[?&]schema=[^&]*/, '') });
let store: PostgresStore | undefined;
try {
  const baton = await openClient(db.url);
  try {
    await enqueueInBatches(baton, 'noop', COMPLETED + QUEUED, 1_000);
  } finally {
    await baton.close();
  }
  await admin.connect();
  await admin.query(`SET search_path = "${schema}"`);
  // The oldest COMPLETED jobs ran and completed (one attempt, lease cleared).
  await admin.query(`UPDATE jobs SET state = 'completed', attempt = 1, lease_token = 1, started_at = created_at, finished_at = created_at, result = 'null'
    WHERE id IN (SELECT id FROM jobs ORDER BY id LIMIT $1)`, [COMPLETED]);

  store = new PostgresStore(db.url.replace(/[?&]schema=[^&]*/, ''), { schema });
  const now = Date.now();
  const claimParams = { workerId: 'explain', tasks: ['noop'], queues: ['default'], limit: LIMIT, leaseMs: 30_000, now };
  // A real claim, so the completion has running jobs with their fencing tokens.
  const running = await store.jobClaim(claimParams);
  const claim = await captured(() => store!.jobClaim(claimParams));
  const complete = await captured(() => store!.jobCompleteMany({ items: running.map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })), now }));

  const counts = async () =>
    (await admin.query<{ state: string; n: string }>(`SELECT state, count(*) AS n FROM jobs GROUP BY state ORDER BY state`)).rows.map((r) => `${r.state} ${r.n}`).join(', ');
  const dead = async () =>
    (await admin.query<{ n: string; size: string }>(`SELECT n_dead_tup AS n, pg_size_pretty(pg_total_relation_size('jobs')) AS size FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass`)).rows[0]!;

  let out = `# EXPLAIN of the PostgreSQL hot path (${(await admin.query<{ v: string }>(`SELECT version() AS v`)).rows[0]!.v.split(' on ')[0]})\n`;
  out += `\nTable: ${await counts()}; claim limit ${LIMIT}, completion of ${running.length} running jobs.\n`;
  out += `\nClaim statement as sent:\n\n\`\`\`sql\n${claim.text.trim()}\n\`\`\`\n\nCompletion statement as sent:\n\n\`\`\`sql\n${complete.text.trim()}\n\`\`\`\n`;
  let state = await dead();
  out += `\n## State 1: right after the completions, before any vacuum or analyze (pg_stat n_dead_tup ${state.n}, which lags; table + indexes ${state.size})\n`;
  out += await explain(admin, 'jobClaim', claim);
  out += await explain(admin, 'jobCompleteMany', complete);
  await admin.query('VACUUM ANALYZE jobs');
  state = await dead();
  out += `\n## State 2: after VACUUM ANALYZE (n_dead_tup ${state.n}, ${state.size})\n`;
  out += await explain(admin, 'jobClaim', claim);
  out += await explain(admin, 'jobCompleteMany', complete);
  process.stdout.write(`${out}\n`);
} finally {
  Object.assign(pg.Pool.prototype, { query: originalQuery, connect: originalConnect });
  await store?.close().catch(() => undefined);
  await admin.end().catch(() => undefined);
  await db.drop();
}
