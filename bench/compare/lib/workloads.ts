/**
 * W1–W7 of issue 4, each the same for every system: one function runs one
 * repetition of one workload for one system and returns its cells (one per
 * table row it fills). Storage is fresh per run and dropped afterwards; children
 * are killed by the runner after each run.
 */
import { type Child, type Report } from '../../lib/child.js';
import { pause, seededRandom, wallNow } from '../../lib/clock.js';
import { measureStartFloor } from '../../floor/start.js';
import { floorText, measureFloors } from '../../floor/variants.js';
import { processMemory } from '../../lib/rss.js';
import { perSecond, summarize } from '../../lib/stats.js';
import { LONG_JOB } from './peer-options.js';
import type { Namespace, System, Variant } from './systems.js';

/** One table cell of one repetition: a number, or a text when there is no number. */
export interface Cell {
  value?: number;
  text?: string;
  /** The trial hit the bound: `value` is the bound, printed as "> bound". */
  capped?: boolean;
}

export interface RunResult {
  cells: Record<string, Cell>;
  /** The outcome is the system's fixed behaviour (a bound hit, "not supported"): later repetitions are skipped. */
  final?: boolean;
  detail?: Record<string, unknown>;
}

export interface Sizes {
  bulk: number;
  batch: number;
  drain: number;
  concurrencies: number[];
  latencyCount: number;
  latencyWarmup: number;
  rate: number;
  cancelTrials: number;
  cancelWarmup: number;
  longJob: { stepMs: number; steps: number };
  /** Time the long job runs before the signal (ms). */
  signalAfter: number;
  /** W5/W6 give up after this long (ms). */
  bound: number;
  scheduleWindow: number;
}

export const FULL: Sizes = {
  bulk: 10_000,
  batch: 1_000,
  drain: 20_000,
  concurrencies: [10, 50],
  latencyCount: 300,
  latencyWarmup: 20,
  rate: 50,
  cancelTrials: 20,
  cancelWarmup: 2,
  longJob: LONG_JOB,
  signalAfter: 1_000,
  bound: 90_000,
  scheduleWindow: 30_000,
};

/** A few seconds in all: checks that the harness runs, measures nothing. */
export const TINY: Sizes = {
  bulk: 200,
  batch: 100,
  drain: 300,
  concurrencies: [10],
  latencyCount: 10,
  latencyWarmup: 2,
  rate: 50,
  cancelTrials: 3,
  cancelWarmup: 1,
  longJob: { stepMs: 100, steps: 30 },
  signalAfter: 300,
  bound: 15_000,
  scheduleWindow: 3_000,
};

export interface Ctx {
  sizes: Sizes;
  log(message: string): void;
  /** Registers storage to drop after the run. */
  track(ns: Namespace): Namespace;
}

const CONCURRENCY = 10;
const sameId = (a: unknown, b: unknown) => String(a) === String(b);

/** W1: bulk enqueue of `bulk` no-op jobs in batches, from the runner process. */
export async function w1(system: System, ctx: Ctx): Promise<RunResult> {
  const ns = ctx.track(await system.namespace());
  const ms = await system.enqueueBulk(ns, ctx.sizes.bulk, ctx.sizes.batch);
  return { cells: { w1: { value: perSecond(ctx.sizes.bulk, ms) } }, detail: { ms } };
}

/**
 * W2: one worker process drains `drain` queued no-op jobs at each concurrency; its
 * peak RSS from /proc, and its start-up: ms from just before the runner spawns it
 * (after the seeding) to its `ready` report arriving (started, ready to claim).
 */
export async function w2(system: System, ctx: Ctx): Promise<RunResult> {
  const cells: Record<string, Cell> = {};
  const detail: Record<string, unknown> = {};
  for (const c of ctx.sizes.concurrencies) {
    const ns = ctx.track(await system.namespace());
    await system.enqueueBulk(ns, ctx.sizes.drain, 1_000);
    const spawnedAt = performance.now();
    const worker = system.worker(ns, { name: `drain c${c}`, tasks: ['noop'], concurrency: c, expect: ctx.sizes.drain });
    await worker.waitForType('ready', undefined, 60_000);
    cells[`start-c${c}`] = { value: performance.now() - spawnedAt };
    const drained = await worker.waitForType('drained', undefined, 300_000);
    const memory = processMemory(worker.pid);
    await worker.close();
    await ns.drop();
    const ms = drained.ms as number;
    cells[`w2-c${c}`] = { value: perSecond(ctx.sizes.drain, ms) };
    cells[`rss-c${c}`] = { value: memory?.peakMB ?? (drained.peakRssMB as number) };
    detail[`c${c}`] = { ms, peakMB: cells[`rss-c${c}`]!.value, source: memory ? '/proc VmHWM' : 'maxRSS', startMs: cells[`start-c${c}`]!.value };
    ctx.log(`${system.name} drain c${c}: started in ${Math.round(cells[`start-c${c}`]!.value!)} ms, ${Math.round(perSecond(ctx.sizes.drain, ms))} jobs/s, peak RSS ${Math.round(cells[`rss-c${c}`]!.value!)} MB`);
  }
  return { cells, detail };
}

/**
 * FLOOR: the storage floor of a Baton system's driver (bench/floor): the lean
 * claim/complete cycle with no job system, in the runner process, each variant on
 * `drain` jobs (as many as a W2 drain). Cells `floor-<variant key>`, jobs/s. A peer has
 * no floor of its own here: no cells, not repeated.
 */
export async function floor(system: System, ctx: Ctx): Promise<RunResult> {
  if (!system.driver) return { cells: {}, final: true };
  const measured = await measureFloors(system.driver, ctx.sizes.drain, (line) => ctx.log(`${system.name} ${line}`));
  return {
    cells: Object.fromEntries(measured.map(({ variant, run }) => [`floor-${variant.key}`, { value: run.jobsPerSecond }])),
    detail: Object.fromEntries(measured.map(({ variant, run }) => [variant.key, { ...run, text: floorText(run.jobsPerSecond) }])),
  };
}

/**
 * W3's floor: the start-latency floor of a Baton system's driver (bench/floor/start.ts),
 * paced as W3 is, in the runner process, no job system. Cells `w3-floor-<p>` (enqueue →
 * claimed) and `w3-fsync-<p>` (the enqueue's commit alone), ms. No cells for a peer.
 */
export async function w3Floor(system: System, ctx: Ctx): Promise<RunResult> {
  if (!system.driver) return { cells: {}, final: true };
  const { latencyCount: count, latencyWarmup: warmup, rate } = ctx.sizes;
  const floor = await measureStartFloor(system.driver, { count, warmup, rate });
  ctx.log(`${system.name} start floor: p50 ${floor.start.p50.toFixed(2)} / p99 ${floor.start.p99.toFixed(2)} ms; enqueue commit p50 ${floor.enqueue.p50.toFixed(2)} ms`);
  const cells: Record<string, Cell> = {};
  for (const p of ['p50', 'p99', 'max'] as const) {
    cells[`w3-floor-${p}`] = { value: floor.start[p] };
    cells[`w3-fsync-${p}`] = { value: floor.enqueue[p] };
  }
  return { cells, detail: { ...floor } };
}

async function pair(system: System, ns: Namespace, tasks: string[], variant?: Variant): Promise<[Child, Child]> {
  const worker = system.worker(ns, { name: tasks.join('+'), tasks, concurrency: CONCURRENCY, variant });
  const client = system.client(ns, variant);
  await Promise.all([worker.waitForType('ready', undefined, 60_000), client.waitForType('ready', undefined, 60_000)]);
  return [worker, client];
}

/** W3: enqueue-to-start latency, idle worker, jobs enqueued one at a time at `rate`/s from another process. */
export async function w3(system: System, ctx: Ctx): Promise<RunResult> {
  const { latencyCount: count, latencyWarmup: warmup, rate } = ctx.sizes;
  const ns = ctx.track(await system.namespace());
  const [worker, client] = await pair(system, ns, ['latency']);
  client.send({ op: 'enqueue-paced', ref: 'paced', task: 'latency', count: count + warmup, rate });
  const reports = await worker.waitForCount('latency', count + warmup, 120_000);
  await client.waitForType('paced', undefined, 60_000);
  const s = summarize(reports.filter((r) => (r.i as number) >= warmup).map((r) => r.ms as number));
  ctx.log(`${system.name} latency: p50 ${s.p50.toFixed(2)} / p99 ${s.p99.toFixed(2)} ms`);
  return { cells: { 'w3-p50': { value: s.p50 }, 'w3-p95': { value: s.p95 }, 'w3-p99': { value: s.p99 }, 'w3-max': { value: s.max } }, detail: { ...s } };
}

/** W4: cancel of a running job from another process, until the handler's signal fires. */
export async function w4(system: System, ctx: Ctx): Promise<RunResult> {
  const ns = ctx.track(await system.namespace());
  const [worker, client] = await pair(system, ns, ['wait-signal']);
  const random = seededRandom(4);
  const samples: number[] = [];
  const outcomes = new Set<string>();
  for (let trial = 0; trial < ctx.sizes.cancelWarmup + ctx.sizes.cancelTrials; trial++) {
    client.send({ op: 'enqueue', ref: `job-${trial}`, task: 'wait-signal' });
    const id = (await client.waitForType('enqueued', (r) => r.ref === `job-${trial}`)).id;
    await worker.waitForType('started', (r) => sameId(r.jobId, id));
    await pause(random() * 50);
    client.send({ op: 'cancel', ref: `cancel-${trial}`, id, task: 'wait-signal' });
    const sent = await client.waitForType('cancel-sent', (r) => r.ref === `cancel-${trial}`);
    if (sent.outcome !== undefined) outcomes.add(String(sent.outcome));
    const fired = await worker.waitFor((r) => (r.type === 'signal' || r.type === 'no-signal') && sameId(r.jobId, id), 'a signal or no-signal report', 30_000);
    if (fired.type === 'no-signal') {
      return {
        cells: { 'w4-p50': { text: 'not supported' }, 'w4-p95': { text: 'not supported' }, 'w4-p99': { text: `not supported: ${[...outcomes].join('; ')}; the handler ran on (no signal)` } },
        final: true,
      };
    }
    if (trial >= ctx.sizes.cancelWarmup) samples.push((fired.at as number) - (sent.at as number));
  }
  const s = summarize(samples);
  ctx.log(`${system.name} cancel: p50 ${s.p50.toFixed(2)} / p99 ${s.p99.toFixed(2)} ms`);
  return { cells: { 'w4-p50': { value: s.p50 }, 'w4-p95': { value: s.p95 }, 'w4-p99': { value: s.p99 } }, detail: { ...s, outcomes: [...outcomes] } };
}

/**
 * W5 / W6: worker A runs the long job (checkpointing where the system can), B
 * waits idle; A gets `signal` after `signalAfter` ms of the job. Measured from just
 * before the signal to the job's handler starting on B, bounded by `bound`.
 */
async function handover(system: System, ctx: Ctx, signal: 'SIGTERM' | 'SIGKILL', variant: Variant, prefix: string): Promise<RunResult> {
  const { bound, signalAfter, longJob } = ctx.sizes;
  const ns = ctx.track(await system.namespace());
  const a = system.worker(ns, { name: `${prefix} A`, tasks: ['checkpointer'], concurrency: CONCURRENCY, variant });
  const client = system.client(ns, variant);
  await Promise.all([a.waitForType('ready', undefined, 60_000), client.waitForType('ready', undefined, 60_000)]);
  client.send({ op: 'enqueue', ref: 'long', task: 'checkpointer', payload: longJob });
  const id = (await client.waitForType('enqueued')).id;
  const first = await a.waitForType('started', (r) => sameId(r.jobId, id), 60_000);
  const b = system.worker(ns, { name: `${prefix} B`, tasks: ['checkpointer'], concurrency: CONCURRENCY, variant });
  await b.waitForType('ready', undefined, 60_000);
  const wait = (first.at as number) + signalAfter - wallNow();
  if (wait > 0) await pause(wait);
  const signalled = wallNow();
  a.process.kill(signal);
  const jobMs = longJob.stepMs * longJob.steps;
  let found: { again?: Report; finished?: Report } = {};
  while (wallNow() - signalled < bound) {
    const again = b.reports.find((r) => r.type === 'started' && sameId(r.jobId, id));
    const finished = a.reports.find((r) => r.type === 'finished' && sameId(r.jobId, id));
    if (again || finished) {
      found = { again, finished };
      break;
    }
    await pause(20);
  }
  const interrupted = a.reports.find((r) => r.type === 'interrupted' && sameId(r.jobId, id));
  if (found.again) {
    const ms = (found.again.at as number) - signalled;
    const step = (found.again.checkpoint as { step?: number } | null)?.step ?? 0;
    const resumed = step > 0 ? 'resumed from its checkpoint' : 'restarted';
    const counted = found.again.attempt !== first.attempt;
    const attemptText = first.attemptText ? `${counted ? 'yes' : 'no'} (${first.attemptText} → ${found.again.attemptText})` : `${counted ? 'yes' : 'no'} (attempt ${first.attempt} → ${found.again.attempt})`;
    ctx.log(`${system.name} ${prefix}: ran again after ${Math.round(ms)} ms, ${resumed}, attempt counted ${attemptText}`);
    return { cells: { [`${prefix}-ms`]: { value: ms }, [`${prefix}-resumed`]: { text: resumed }, [`${prefix}-attempt`]: { text: attemptText } }, detail: { ms, resumedAtStep: step, steps: longJob.steps, interrupted: Boolean(interrupted) } };
  }
  if (found.finished) {
    const after = (found.finished.at as number) - signalled;
    ctx.log(`${system.name} ${prefix}: never handed over; finished on the signalled worker ${Math.round(after)} ms after ${signal}`);
    return {
      cells: {
        [`${prefix}-ms`]: { text: `never: finished on the signalled worker (+${(after / 1000).toFixed(1)} s)` },
        [`${prefix}-resumed`]: { text: '—' },
        [`${prefix}-attempt`]: { text: '—' },
      },
      final: true,
      detail: { finishedAfterMs: after, jobMs },
    };
  }
  ctx.log(`${system.name} ${prefix}: not run again within ${bound / 1000} s`);
  return {
    cells: { [`${prefix}-ms`]: { value: bound, capped: true }, [`${prefix}-resumed`]: { text: '—' }, [`${prefix}-attempt`]: { text: '—' } },
    final: true,
  };
}

/** W5: SIGTERM. */
export const w5 = (system: System, ctx: Ctx) => handover(system, ctx, 'SIGTERM', system.baton ? 'handoff' : 'default', 'w5');
/** W6 with default settings. */
export const w6 = (system: System, ctx: Ctx) => handover(system, ctx, 'SIGKILL', 'default', 'w6');
/** W6 with the shortest documented lease / stall / expiry. */
export async function w6short(system: System, ctx: Ctx): Promise<RunResult> {
  if (system.name === 'graphile-worker') {
    return { cells: { 'w6s-ms': { text: 'no setting (lock timeout fixed at 4 h)' }, 'w6s-resumed': { text: '—' }, 'w6s-attempt': { text: '—' } }, final: true };
  }
  return handover(system, ctx, 'SIGKILL', 'short-lease', 'w6s');
}

/**
 * W7: three processes with the same every-second (or the finest the system has)
 * recurring job, declared in each of them, for `scheduleWindow` ms. A tick is in
 * the window when its instant is (the `tickAt` the fixture reports: Baton's
 * `scheduledFor`, BullMQ's scheduler job id) or, where the system gives no instant,
 * when its run started in it; the runs of a tick due near the window's end get a
 * grace period to show up.
 */
export async function w7(system: System, ctx: Ctx): Promise<RunResult> {
  const periodMs = system.baton || system.name === 'bullmq' ? 1_000 : 60_000;
  if (periodMs === 60_000 && ctx.sizes.scheduleWindow >= 30_000) {
    // Start ~33 s into a minute so the window (after ~4 s of start-up) holds one minute boundary.
    const intoMinute = wallNow() % 60_000;
    await pause((33_000 - intoMinute + 60_000) % 60_000);
  }
  const ns = ctx.track(await system.namespace());
  const workers = [0, 1, 2].map((n) => system.worker(ns, { name: `schedule ${n}`, tasks: ['tick'], concurrency: 1, schedule: true }));
  await Promise.all(workers.map((w) => w.waitForType('ready', undefined, 60_000)));
  const start = wallNow();
  await pause(ctx.sizes.scheduleWindow);
  const end = wallNow();
  await pause(SCHEDULE_GRACE_MS);
  const all = workers.flatMap((w) => w.all('tick'));
  const byInstant = all.length > 0 && all.every((r) => typeof r.tickAt === 'number');
  const runs = byInstant
    ? all.filter((r) => (r.tickAt as number) > start && (r.tickAt as number) <= end)
    : all.filter((r) => (r.at as number) >= start && (r.at as number) <= end);
  const keys = new Set(runs.map((r) => String(r.tickKey)));
  const expected = Math.floor(end / periodMs) - Math.floor(start / periodMs);
  const duplicates = runs.length - keys.size;
  const misses = Math.max(0, expected - keys.size);
  const granularity = periodMs === 1_000 ? 'every 1 s' : 'cron granularity 1 min';
  const text = `${runs.length} runs of ${keys.size} distinct ticks, ${expected} tick(s) due in the window: ${duplicates} duplicate, ${misses} missed (${granularity})`;
  const lateness = byInstant ? runs.map((r) => (r.at as number) - (r.tickAt as number)) : [];
  ctx.log(`${system.name} schedule: ${text}${lateness.length ? `; run started ${Math.round(Math.min(...lateness))}–${Math.round(Math.max(...lateness))} ms after its tick` : ''}`);
  return {
    cells: { w7: { text } },
    detail: {
      runs: runs.length,
      ticks: expected,
      distinct: keys.size,
      duplicates,
      misses,
      periodMs,
      keyedBy: byInstant ? 'tick instant' : 'run start',
      byProcess: workers.map((w) => w.all('tick').length),
      ...(lateness.length ? { latenessMs: summarize(lateness) } : {}),
    },
  };
}

/** How long W7 keeps listening after its window, for runs of ticks due just before its end (ms). */
const SCHEDULE_GRACE_MS = 1_500;
