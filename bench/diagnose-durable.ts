/**
 * `node --conditions=baton-source --import tsx bench/diagnose-durable.ts [postgres|sqlite]`
 *
 * Where the time of the durable section's misses goes (docs/benchmarks.md, issue 32):
 * one in-process worker on a fresh database runs S2's job (200 sequential no-op steps)
 * with every store call timed (createBaton's observer), and, on PostgreSQL, the floor of
 * one autocommitted INSERT into a scratch table on one connection of the same server.
 * Prints JSON: ms per step, store calls per step with their mean ms, the floor.
 */
import { pino } from 'pino';
import { createBaton, defineTask } from 'baton-jobs';
import { postgresDriver, sqliteDriver, withAdmin } from './lib/drivers.js';
import { storeTimer } from './fixtures/io.js';

const driver = process.argv[2] === 'sqlite' ? sqliteDriver : postgresDriver;
const STEPS = 200;
const db = await driver.createDatabase('diagnose');
const timer = storeTimer();
const baton = await createBaton({ database: db.url, logger: pino({ level: 'silent' }) }, timer.observer);
let stepsMs = 0;
const done = new Promise<void>((resolve) => {
  const job = defineTask('many-steps', {
    handler: async (_p: unknown, ctx) => {
      timer.reset();
      const t0 = performance.now();
      for (let i = 1; i <= STEPS; i++) await ctx.step('s', async () => i);
      stepsMs = performance.now() - t0;
      return null;
    },
  });
  const worker = baton.worker({ tasks: [job], concurrency: 1 });
  worker.on('job:completed', () => void worker.stop().then(() => resolve()));
  void worker.start().then(() => baton.enqueue(job, null));
});
await done;
const ops = Object.fromEntries(Object.entries(structuredClone(timer.ops)).map(([op, v]) => [op, { perStep: v.count / STEPS, meanMs: v.totalMs / v.count }]));
await baton.close();
let floor: number | undefined;
if (driver === postgresDriver) {
  floor = await withAdmin(async (c) => {
    await c.query('CREATE SCHEMA IF NOT EXISTS diag_floor_schema');
    await c.query('CREATE TABLE IF NOT EXISTS diag_floor_schema.t (i int)');
    const t0 = performance.now();
    for (let i = 0; i < STEPS; i++) await c.query('INSERT INTO diag_floor_schema.t VALUES ($1)', [i]);
    const ms = (performance.now() - t0) / STEPS;
    await c.query('DROP SCHEMA diag_floor_schema CASCADE');
    return ms;
  });
}
await db.drop();

// S5: 100 jobs × ctx.sleep(2 s), concurrency 10, in process: when each sleep ends
// (`wait.until` of its job:waiting) and when its job is claimed again, completed.
const s5db = await driver.createDatabase('diagnose-s5');
const s5 = await createBaton({ database: s5db.url, logger: pino({ level: 'silent' }) });
const JOBS = 100;
const byJob = new Map<number, { until?: number; suspendedAt?: number; reclaimedAt?: number; completedAt?: number }>();
const entry = (id: number) => byJob.get(id) ?? (byJob.set(id, {}), byJob.get(id)!);
const sleeper = defineTask('sleeper', { handler: async (_p: unknown, ctx) => void (await ctx.sleep(2_000)) });
const worker = s5.worker({ tasks: [sleeper], concurrency: 10, prefetch: 10 });
let t0 = 0;
const finished = new Promise<void>((resolve) => {
  let completed = 0;
  worker.on('job:waiting', (e) => Object.assign(entry(e.job.id), { until: e.wait.until!.getTime(), suspendedAt: Date.now() }));
  worker.on('job:claimed', (e) => {
    const x = entry(e.job.id);
    if (x.until !== undefined && x.reclaimedAt === undefined) x.reclaimedAt = Date.now();
  });
  worker.on('job:completed', (e) => {
    entry(e.job.id).completedAt = Date.now();
    if (++completed === JOBS) resolve();
  });
});
await worker.start();
t0 = Date.now();
await s5.enqueueMany(Array.from({ length: JOBS }, () => ({ task: 'sleeper', payload: null })));
await finished;
const total = Date.now() - t0;
await worker.stop();
await s5.close();
await s5db.drop();
const rows = [...byJob.values()];
const rel = (xs: number[]) => ({ min: Math.min(...xs), max: Math.max(...xs) });
const lateness = rows.map((r) => r.reclaimedAt! - r.until!).sort((a, b) => a - b);
const buckets: Record<string, number> = {};
for (const r of rows) {
  const k = `${Math.floor((r.reclaimedAt! - t0) / 250) * 250}`;
  buckets[k] = (buckets[k] ?? 0) + 1;
}
process.stdout.write(`${JSON.stringify({
  driver: driver.name,
  s2: { msPerStep: stepsMs / STEPS, storeCallsDuringSteps: ops, autocommitInsertFloorMs: floor },
  s5: {
    totalMs: total,
    suspendedAtMs: rel(rows.map((r) => r.suspendedAt! - t0)),
    sleepEndsAtMs: rel(rows.map((r) => r.until! - t0)),
    reclaimLateAfterSleepEndMs: { p0: lateness[0], p50: lateness[Math.floor(lateness.length / 2)], p90: lateness[Math.floor(lateness.length * 0.9)], max: lateness.at(-1) },
    reclaimedPer250msFromEnqueue: buckets,
  },
}, null, 2)}\n`);
