/**
 * The durable-execution section of bench:compare (`--durable`): workloads S1–S7 of
 * issue 32, item 7, run on Baton (SQLite, PostgreSQL) and DBOS Transact, each through
 * a fixture speaking the same JSON-lines protocol (bench/fixtures/durable.ts,
 * ../fixtures/dbos.ts). A worker process and a client process per run; fresh storage
 * per run (a SQLite file, a PostgreSQL schema), dropped afterwards. Every wait is
 * bounded, so a broken peer ends its row with a reason instead of hanging the run.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { NODE_TS_ARGS, NODE_TS_BUILT_ARGS, spawnFixture, spawnScript, type Child, type Report } from '../../lib/child.js';
import { pause, wallNow } from '../../lib/clock.js';
import { dropSchema, postgresDriver, postgresUrl, sqliteDriver, trackSchema, withAdmin, type BenchDriver } from '../../lib/drivers.js';
import { perSecond, summarize } from '../../lib/stats.js';
import type { Namespace } from './systems.js';
import type { Cell, RunResult } from './workloads.js';

/** Baton's worker lease in S3: its default `leaseTtl`, ms. */
export const BATON_DEFAULT_LEASE_MS = 30_000;
/** Baton's default `pollInterval`, ms (S3's target: lease + one poll). */
export const BATON_DEFAULT_POLL_MS = 1_000;
const CONCURRENCY = 10;

export interface DurableSizes {
  s1Jobs: number;
  s1Steps: number;
  s2Steps: number;
  s3Steps: number;
  s3StepMs: number;
  s3KillAt: number;
  s4Trials: number;
  s4Warmup: number;
  s5Jobs: number;
  s5SleepMs: number;
  s6Parents: number;
  s6Children: number;
  s7Trials: number;
  s7Warmup: number;
  /** Every workload gives up after this long (ms), reported as "> bound". */
  bound: number;
}

export const DURABLE_FULL: DurableSizes = {
  s1Jobs: 500,
  s1Steps: 5,
  s2Steps: 200,
  s3Steps: 10,
  s3StepMs: 200,
  s3KillAt: 4,
  s4Trials: 20,
  s4Warmup: 2,
  s5Jobs: 100,
  s5SleepMs: 2_000,
  s6Parents: 10,
  s6Children: 20,
  s7Trials: 30,
  s7Warmup: 3,
  bound: 120_000,
};

/** Seconds in all per system: checks the harness, measures nothing. */
export const DURABLE_TINY: DurableSizes = {
  s1Jobs: 20,
  s1Steps: 5,
  s2Steps: 20,
  s3Steps: 5,
  s3StepMs: 100,
  s3KillAt: 2,
  s4Trials: 2,
  s4Warmup: 1,
  s5Jobs: 10,
  s5SleepMs: 200,
  s6Parents: 2,
  s6Children: 3,
  s7Trials: 3,
  s7Warmup: 1,
  bound: 45_000,
};

export interface DurableSystem {
  name: string;
  baton: boolean;
  version: string;
  check(): Promise<void>;
  options(): string[];
  namespace(): Promise<Namespace>;
  worker(ns: Namespace, name: string): Child;
  client(ns: Namespace): Child;
}

export interface DurableCtx {
  sizes: DurableSizes;
  log(message: string): void;
  track(ns: Namespace): Namespace;
}

const hex = () => randomBytes(5).toString('hex');

function batonDurable(driver: BenchDriver, version: string, check: () => void): DurableSystem {
  return {
    name: `baton ${driver.name}`,
    baton: true,
    version,
    check: async () => {
      check();
      await driver.check();
    },
    options: () => [
      `${driver.description}; ${driver.wakeUps}`,
      `worker: default options except concurrency ${CONCURRENCY} and prefetch ${CONCURRENCY} (leaseTtl ${BATON_DEFAULT_LEASE_MS / 1000} s, pollInterval ${BATON_DEFAULT_POLL_MS} ms, rescueInterval 1 s); S3: a new worker process is started right after the SIGKILL and takes the job once the killed one's lease (${BATON_DEFAULT_LEASE_MS / 1000} s, the default) has expired`,
      'S7: the client awaits the job with `waitForResult` when it has one, else by `followJob(id)` (default intervalMs 500) until a terminal state; the "via" column of the results file says which ran',
    ],
    async namespace() {
      const db = await driver.createDatabase('durable');
      return { config: { database: db.url }, drop: () => db.drop() };
    },
    worker(ns, name) {
      return spawnFixture('durable.ts', { role: 'worker', database: ns.config.database, worker: { concurrency: CONCURRENCY, prefetch: CONCURRENCY } }, { name: `${this.name} ${name}`, built: true });
    },
    client(ns) {
      return spawnFixture('durable.ts', { role: 'client', database: ns.config.database }, { name: `${this.name} client`, built: true });
    },
  };
}

const DBOS_VERSION = '5.3.0';
const dbosFixture = fileURLToPath(new URL('../fixtures/dbos.ts', import.meta.url));

const dbos: DurableSystem = {
  name: 'dbos',
  baton: false,
  version: DBOS_VERSION,
  check: async () => {
    await withAdmin((c) => c.query('SELECT 1'));
    await import('@dbos-inc/dbos-sdk').catch((error: Error) => {
      throw new Error(`@dbos-inc/dbos-sdk does not load (${error.message}); npm ci --prefix bench/compare`);
    });
  },
  options: () => [
    `@dbos-inc/dbos-sdk ${DBOS_VERSION} at its documented defaults: DBOS.setConfig({ name, systemDatabaseUrl, systemDatabaseSchemaName }) with a schema of its own per run, workflows by DBOS.registerWorkflow, steps by DBOS.runStep, DBOS.sleep, children by DBOS.startWorkflow + getResult, one queue registered after launch (DBOS.registerQueue) with globalConcurrency ${CONCURRENCY} (default minPollingIntervalMs 1000); the client is a DBOSClient (enqueue on that queue, cancelWorkflow, retrieveWorkflow(id).getResult() with its default polling)`,
    'S3: the restarted worker has the default executor id (`local`), so its launch recovers the killed one\'s workflow; S4: the step waits on DBOS.stepStatus.cancelSignal; "done" is reported at the end of the workflow body (DBOS has no completion event)',
  ],
  async namespace() {
    const schema = `cmp_dbos_${hex()}`;
    trackSchema(schema);
    return { config: { systemDatabaseUrl: postgresUrl, schema }, drop: () => dropSchema(schema) };
  },
  worker(ns, name) {
    return spawnScript(dbosFixture, { role: 'worker', ...ns.config, concurrency: CONCURRENCY }, { nodeArgs: NODE_TS_ARGS, name: `dbos ${name}` });
  },
  client(ns) {
    return spawnScript(dbosFixture, { role: 'client', ...ns.config, concurrency: CONCURRENCY }, { nodeArgs: NODE_TS_ARGS, name: 'dbos client' });
  },
};
void NODE_TS_BUILT_ARGS;

/** The systems of the durable section, in the interleaving order. */
export function durableSystems(batonVersion: string, checkBuilt: () => void): DurableSystem[] {
  return [batonDurable(sqliteDriver, batonVersion, checkBuilt), batonDurable(postgresDriver, batonVersion, checkBuilt), dbos];
}

// --- workloads ---

const START_MS = 60_000;

async function pair(system: DurableSystem, ctx: DurableCtx, name: string): Promise<{ ns: Namespace; worker: Child; client: Child }> {
  const ns = ctx.track(await system.namespace());
  const worker = system.worker(ns, name);
  const client = system.client(ns);
  await Promise.all([worker.waitForType('ready', undefined, START_MS), client.waitForType('ready', undefined, START_MS)]);
  return { ns, worker, client };
}

/** Waits until `count` reports of `type` came from `child`, or `boundMs` passed; returns them (fewer when bounded). */
async function collect(child: Child, type: string, count: number, boundMs: number): Promise<Report[]> {
  try {
    return await child.waitForCount(type, count, boundMs);
  } catch (error) {
    if (!child.running) throw error;
    return child.all(type);
  }
}

/**
 * Enqueues `count` jobs of `task` from the client with the worker idle and ready, and
 * waits for `count` `done` reports: ms from just before the enqueue to the last one.
 */
async function batch(system: DurableSystem, ctx: DurableCtx, task: string, count: number, payload: unknown): Promise<{ ms: number; done: number; enqueueMs: number }> {
  const { worker, client } = await pair(system, ctx, task);
  client.send({ op: 'enqueue', ref: 'batch', task, payload, count });
  const enqueued = await client.waitForType('enqueued', (r) => r.ref === 'batch', ctx.sizes.bound);
  const at = enqueued.at as number;
  const done = await collect(worker, 'done', count, Math.max(1, ctx.sizes.bound - (wallNow() - at)));
  if (done.length < count) return { ms: ctx.sizes.bound, done: done.length, enqueueMs: (enqueued.returnedAt as number) - at };
  return { ms: Math.max(...done.map((r) => r.at as number)) - at, done: count, enqueueMs: (enqueued.returnedAt as number) - at };
}

const capped = (bound: number, text: string): Cell => ({ value: bound, capped: true, text });

/** S1: `s1Jobs` jobs of `s1Steps` no-op steps at concurrency 10, from the enqueue to the last completion. */
export async function s1(system: DurableSystem, ctx: DurableCtx): Promise<RunResult> {
  const { s1Jobs: n } = ctx.sizes;
  const r = await batch(system, ctx, 'five-steps', n, null);
  if (r.done < n) return { cells: { s1: { value: 0, text: `${r.done} of ${n} done within ${ctx.sizes.bound / 1000} s` } }, final: true };
  ctx.log(`${system.name} S1: ${Math.round(perSecond(n, r.ms))} jobs/s (enqueue ${Math.round(r.enqueueMs)} ms)`);
  return { cells: { s1: { value: perSecond(n, r.ms) } }, detail: r };
}

/** S2: one job of `s2Steps` sequential no-op steps, timed inside the job. */
export async function s2(system: DurableSystem, ctx: DurableCtx): Promise<RunResult> {
  const { worker, client } = await pair(system, ctx, 'many-steps');
  client.send({ op: 'enqueue', ref: 's2', task: 'many-steps', payload: { steps: ctx.sizes.s2Steps } });
  const timed = await worker.waitForType('timed', undefined, ctx.sizes.bound).catch(() => undefined);
  if (!timed) return { cells: { s2: capped(ctx.sizes.bound, `not done within ${ctx.sizes.bound / 1000} s`) }, final: true };
  const perStep = (timed.ms as number) / (timed.steps as number);
  ctx.log(`${system.name} S2: ${perStep.toFixed(3)} ms per step`);
  return { cells: { s2: { value: perStep } }, detail: { ms: timed.ms, steps: timed.steps } };
}

/**
 * S3: worker A runs a job of `s3Steps` steps of `s3StepMs`; it is SIGKILLed once step
 * `s3KillAt` has started; worker B (a new process) is started at once. Measured from
 * the kill to the job's completion on B; the steps whose function ran again on B.
 */
export async function s3(system: DurableSystem, ctx: DurableCtx): Promise<RunResult> {
  const { s3Steps: steps, s3StepMs: stepMs, s3KillAt: killAt, bound } = ctx.sizes;
  const { ns, worker: a, client } = await pair(system, ctx, 'S3 A');
  client.send({ op: 'enqueue', ref: 's3', task: 'ten-steps', payload: { steps, stepMs } });
  const id = ((await client.waitForType('enqueued', (r) => r.ref === 's3')).ids as unknown[])[0];
  await a.waitForType('step-start', (r) => r.n === killAt && String(r.jobId) === String(id), bound);
  await pause(stepMs / 2);
  const killed = wallNow();
  a.process.kill('SIGKILL');
  await a.exited;
  const b = system.worker(ns, 'S3 B');
  const done = await b.waitForType('done', (r) => String(r.jobId) === String(id), bound).catch(() => undefined);
  const finishedOnA = a.all('step-end').map((r) => r.n as number);
  const ranOnB = [...new Set(b.all('step-start').filter((r) => String(r.jobId) === String(id)).map((r) => r.n as number))].sort((x, y) => x - y);
  const rerunFinished = ranOnB.filter((n) => finishedOnA.includes(n));
  const firstOnB = b.all('step-start')[0]?.at as number | undefined;
  const rerunText = `re-ran ${ranOnB.filter((n) => n <= Math.max(0, ...finishedOnA) + 1).join(', ') || 'none'}; finished steps re-run: ${rerunFinished.length ? rerunFinished.join(', ') : 'none'}`;
  if (!done) {
    ctx.log(`${system.name} S3: not completed within ${bound / 1000} s of the kill (${rerunText})`);
    return { cells: { 's3-ms': capped(bound, ''), 's3-rerun': { text: rerunText } }, final: true };
  }
  const ms = (done.at as number) - killed;
  const resumeMs = firstOnB === undefined ? undefined : firstOnB - killed;
  ctx.log(`${system.name} S3: completed ${Math.round(ms)} ms after the kill (first step on B after ${Math.round(resumeMs ?? NaN)} ms); ${rerunText}`);
  return { cells: { 's3-ms': { value: ms }, 's3-resume': resumeMs === undefined ? { text: '—' } : { value: resumeMs }, 's3-rerun': { text: rerunText } }, detail: { ms, resumeMs, finishedOnA, ranOnB } };
}

/** S4: cancel from the client → the running step's signal, `s4Trials` trials. */
export async function s4(system: DurableSystem, ctx: DurableCtx): Promise<RunResult> {
  const { worker, client } = await pair(system, ctx, 'wait-signal-step');
  const samples: number[] = [];
  /** From the cancel call's return (its request committed) to the signal, where the fixture reports it. */
  const afterCommit: number[] = [];
  for (let trial = 0; trial < ctx.sizes.s4Warmup + ctx.sizes.s4Trials; trial++) {
    client.send({ op: 'enqueue', ref: `s4-${trial}`, task: 'wait-signal-step' });
    const id = ((await client.waitForType('enqueued', (r) => r.ref === `s4-${trial}`)).ids as unknown[])[0];
    await worker.waitForType('started', (r) => String(r.jobId) === String(id), 30_000);
    await pause(20 + Math.random() * 30);
    client.send({ op: 'cancel', ref: `cancel-${trial}`, id });
    const sent = await client.waitForType('cancel-sent', (r) => r.ref === `cancel-${trial}`, 30_000);
    const fired = await worker.waitForType('signal', (r) => String(r.jobId) === String(id), 30_000).catch(() => undefined);
    if (!fired) return { cells: { 's4-p50': { text: 'no signal within 30 s' }, 's4-p95': { text: 'no signal within 30 s' } }, final: true };
    if (trial >= ctx.sizes.s4Warmup) {
      samples.push((fired.at as number) - (sent.at as number));
      if (typeof sent.returnedAt === 'number') afterCommit.push((fired.at as number) - sent.returnedAt);
    }
  }
  const s = summarize(samples);
  ctx.log(`${system.name} S4: p50 ${s.p50.toFixed(2)} / p95 ${s.p95.toFixed(2)} ms`);
  return { cells: { 's4-p50': { value: s.p50 }, 's4-p95': { value: s.p95 } }, detail: { ...s, ...(afterCommit.length ? { fromCancelReturnToSignal: summarize(afterCommit) } : {}) } };
}

/** S5: `s5Jobs` jobs of one durable sleep of `s5SleepMs` at concurrency 10. */
export async function s5(system: DurableSystem, ctx: DurableCtx): Promise<RunResult> {
  const { s5Jobs: n, s5SleepMs: sleepMs } = ctx.sizes;
  const r = await batch(system, ctx, 'sleeper', n, { ms: sleepMs });
  if (r.done < n) return { cells: { s5: capped(ctx.sizes.bound, `${r.done} of ${n} done`) }, final: true };
  ctx.log(`${system.name} S5: ${(r.ms / 1000).toFixed(2)} s`);
  return { cells: { s5: { value: r.ms } }, detail: r };
}

/** S6: `s6Parents` parents of `s6Children` children each, the parent waiting for all of them. */
export async function s6(system: DurableSystem, ctx: DurableCtx): Promise<RunResult> {
  const { s6Parents: n, s6Children: children } = ctx.sizes;
  const r = await batch(system, ctx, 'parent', n, { children });
  if (r.done < n) return { cells: { s6: capped(ctx.sizes.bound, `${r.done} of ${n} done`) }, final: true };
  ctx.log(`${system.name} S6: ${(r.ms / 1000).toFixed(2)} s`);
  return { cells: { s6: { value: r.ms } }, detail: r };
}

/** S7: enqueue in the client, run in the worker, await the result in the client: one at a time, `s7Trials` trials. */
export async function s7(system: DurableSystem, ctx: DurableCtx): Promise<RunResult> {
  const { client } = await pair(system, ctx, 'echo');
  const samples: number[] = [];
  const via = new Set<string>();
  for (let trial = 0; trial < ctx.sizes.s7Warmup + ctx.sizes.s7Trials; trial++) {
    client.send({ op: 'roundtrip', ref: `s7-${trial}`, task: 'echo', payload: { trial } });
    const r = await client.waitForType('result', (x) => x.ref === `s7-${trial}`, 70_000).catch(() => undefined);
    if (!r) return { cells: { 's7-p50': { text: 'no result within 70 s' }, 's7-p95': { text: 'no result within 70 s' } }, final: true };
    via.add(String(r.via));
    if (trial >= ctx.sizes.s7Warmup) samples.push((r.doneAt as number) - (r.at as number));
  }
  const s = summarize(samples);
  ctx.log(`${system.name} S7: p50 ${s.p50.toFixed(2)} / p95 ${s.p95.toFixed(2)} ms via ${[...via].join(', ')}`);
  return { cells: { 's7-p50': { value: s.p50 }, 's7-p95': { value: s.p95 } }, detail: { ...s, via: [...via] } };
}

export interface DurableStep {
  workload: string;
  title: string;
  run: (system: DurableSystem, ctx: DurableCtx) => Promise<RunResult>;
  parallel?: boolean;
}

export const DURABLE_STEPS: DurableStep[] = [
  { workload: 'S1', title: 'jobs of no-op steps, concurrency 10', run: s1 },
  { workload: 'S2', title: 'sequential steps in one job', run: s2 },
  { workload: 'S3', title: 'SIGKILL during a step → a new worker process resumes', run: s3, parallel: true },
  { workload: 'S4', title: "cancel → the running step's signal", run: s4 },
  { workload: 'S5', title: 'durable sleeps at concurrency 10', run: s5 },
  { workload: 'S6', title: 'parents with children, fan-in', run: s6 },
  { workload: 'S7', title: 'awaited result from another process', run: s7 },
];

/** One row of a bench:compare table, W or S workloads: its sample key, workload, label, unit and which way is better. */
export interface Row {
  key: string;
  workload: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower' | 'none';
  /** Divide values by this for printing (ms → s). */
  scale?: number;
  /** The step whose runs fill this row, when not `workload` (RSS and START come with W2). */
  step?: string;
  /** A jobs/s row that also prints µs per job (1,000,000 ÷ the median): the storage floors. */
  perJob?: boolean;
  /** A drain row's worker concurrency: the row prints each Baton driver's share of its floor. */
  concurrency?: number;
}

export function durableRows(s: DurableSizes): Row[] {
  return [
    { key: 's1', workload: 'S1', label: `${s.s1Jobs} jobs × ${s.s1Steps} no-op steps, concurrency 10, enqueue → last completion`, unit: 'jobs/s', better: 'higher' },
    { key: 's2', workload: 'S2', label: `per step, ${s.s2Steps} sequential no-op steps in one job`, unit: 'ms', better: 'lower' },
    { key: 's3-ms', workload: 'S3', label: `SIGKILL during step ${s.s3KillAt} of ${s.s3Steps} (${s.s3StepMs} ms each), new worker process: kill → completed`, unit: 's', better: 'lower', scale: 1000 },
    { key: 's3-resume', workload: 'S3', label: 'kill → first step function runs on the new process', unit: 's', better: 'lower', scale: 1000 },
    { key: 's3-rerun', workload: 'S3', label: 'steps whose function ran again', unit: '', better: 'none' },
    { key: 's4-p50', workload: 'S4', label: "cancel → running step's signal p50", unit: 'ms', better: 'lower' },
    { key: 's4-p95', workload: 'S4', label: "cancel → running step's signal p95", unit: 'ms', better: 'lower' },
    { key: 's5', workload: 'S5', label: `${s.s5Jobs} jobs × sleep(${s.s5SleepMs / 1000} s), concurrency 10: enqueue → last completion`, unit: 's', better: 'lower', scale: 1000 },
    { key: 's6', workload: 'S6', label: `${s.s6Parents} parents × ${s.s6Children} children, fan-in: enqueue → last parent completed`, unit: 's', better: 'lower', scale: 1000 },
    { key: 's7-p50', workload: 'S7', label: 'awaited result p50 (enqueue + await in process A, worker in B)', unit: 'ms', better: 'lower' },
    { key: 's7-p95', workload: 'S7', label: 'awaited result p95', unit: 'ms', better: 'lower' },
  ];
}
