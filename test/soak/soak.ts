/**
 * One soak (issue 34): the fleet (four worker processes kept alive by the supervisor) runs
 * the traffic for `minutes` while the nemesis injects its seeded plan of faults; then the
 * traffic stops, the schedule is paused, every job is let finish, the fleet stops, and the
 * checker decides every invariant from the external ledger and Baton's final rows.
 *
 * On PostgreSQL the database is a throwaway cluster of the soak's own (the nemesis
 * restarts it; the main server is never touched), and each worker reaches it through a
 * TCP proxy of its own (the nemesis cuts one worker off). On SQLite it is a file in the
 * soak's directory, and only the process faults and the CPU hog apply.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createBaton, sleep, type Baton } from 'baton-jobs';
import { allFullJobs } from '../helpers/client.js';
import { createCluster, type ThrowawayCluster } from '../helpers/pg-cluster.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { checkSoak, formatReport, type SoakReport } from './check-soak.js';
import { FenceStore, serveFenceStore } from './fence-store.js';
import { FLEET } from './fleet-tasks.js';
import { LedgerWriter, readLedger } from './ledger.js';
import { cpuHog, runNemesis } from './nemesis.js';
import type { FaultKind } from './ledger-events.js';
import { countByKind, planNemesis, type PlannedFault } from './nemesis-plan.js';
import { Supervisor } from './supervisor.js';
import { renderPng, timelineSvg } from './timeline.js';
import { CANCEL_REASON, Traffic } from './traffic.js';

/** What {@link runSoak} runs. */
export interface SoakOptions {
  driver: 'postgres' | 'sqlite';
  /** How long the traffic and the nemesis run, minutes (fractions allowed). */
  minutes: number;
  /** The nemesis plan's seed. */
  seed: number;
  /** Where the ledger, the SQLite database, the worker logs and the report go (made if missing). */
  dir: string;
  /** The fault kinds the nemesis draws from. @defaultValue every kind that applies to the driver */
  faults?: readonly FaultKind[];
  /** Jobs the producer enqueues per second. @defaultValue 50 (with children and ticks, ~100,000 jobs in 30 minutes) */
  jobsPerSecond?: number;
  /** Progress lines (phases, faults planned), e.g. `console.log`. @defaultValue none */
  log?: (line: string) => void;
}

/** What a soak found. */
export interface SoakResult {
  report: SoakReport;
  plan: PlannedFault[];
  /** The report as printed: the settings and seed, then {@link formatReport}'s lines. */
  text: string;
  /** The PNG timeline of throughput against faults. */
  png: string;
  /** Jobs still not terminal when the drain gave up (the report lists them as violations). */
  unfinished: number;
}

/** How long the drain after the traffic may take before the soak checks what it has, ms. */
const DRAIN_LIMIT_MS = 300_000;
/** Ticks due this close to the schedule's pause may not have been enqueued: the window ends this far before it, ms. */
const TICK_EDGE_MS = 5_000;

/**
 * Runs one soak and checks it.
 * @returns the report (the soak passed when `report.violations` is empty) and where its PNG is
 * @throws when the fleet cannot start, or the database cannot be restarted
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => {});
  const ledgerDir = join(options.dir, 'ledger');
  mkdirSync(ledgerDir, { recursive: true });
  const cleanups: Array<() => Promise<void> | void> = [];
  try {
    const db = await openDatabase(options, cleanups);
    const logger = pino({ level: 'warn' }, pino.destination({ dest: join(options.dir, 'soak.log'), sync: false }));
    const baton = await createBaton({ database: db.clientUrl, logger });
    cleanups.push(() => baton.close());
    const soakLedger = new LedgerWriter(ledgerDir, 'soak');
    const fenceLedger = new LedgerWriter(ledgerDir, 'fence');
    const fence = await serveFenceStore(new FenceStore((event) => fenceLedger.record(event)));
    cleanups.push(() => {
      fence.server.closeAllConnections();
      fence.server.close();
    });

    const supervisor = new Supervisor(FLEET.workers, (slot) => ({ database: db.workerUrl(slot), ledgerDir, slot, fenceUrl: fence.url }), soakLedger);
    cleanups.push(async () => void (await supervisor.stop(30_000)));
    await supervisor.start();
    const startedAt = Date.now();
    const durationMs = Math.round(options.minutes * 60_000);
    const plan = planNemesis({ seed: options.seed, durationMs, driver: options.driver, leaseMs: FLEET.leaseTtl, workers: FLEET.workers, meanGapMs: 10_000, ...(options.faults ? { kinds: options.faults } : {}) });
    if (plan.length === 0) throw new RangeError(`the nemesis plan for ${options.minutes} min (seed ${options.seed}) holds no fault: no fault lands in the first 10 s or the last ${(4 * FLEET.leaseTtl) / 1000} s; give more minutes`);
    log(`soak ${options.driver}: ${options.minutes} min, seed ${options.seed}, ${plan.length} fault${plan.length === 1 ? '' : 's'} planned ${JSON.stringify(countByKind(plan))}`);

    const traffic = new Traffic(baton, new LedgerWriter(ledgerDir, 'client'), { jobsPerSecond: options.jobsPerSecond ?? 50 });
    const stopTraffic = new AbortController();
    cleanups.push(() => stopTraffic.abort());
    const trafficDone = traffic.run(stopTraffic.signal);
    const nemesis = runNemesis(plan, {
      pidOf: (slot) => supervisor.pidOf(slot),
      ...(db.proxies ? { proxyOf: (slot: number) => db.proxies![slot]! } : {}),
      ...(db.cluster ? { restartDatabase: () => db.cluster!.restart() } : {}),
      cpuHog,
    }, soakLedger, startedAt, stopTraffic.signal);
    const nemesisFailed = nemesis.then(() => new Promise<never>(() => {}));
    await Promise.race([sleep(durationMs), nemesisFailed]);
    stopTraffic.abort();
    await Promise.all([trafficDone, nemesis]);
    log(`soak ${options.driver}: traffic stopped after ${traffic.enqueued} jobs; draining`);

    // Drain: no new ticks, every message delivered, every job ended; limits still sampled.
    await retry(() => baton.schedules.pause(FLEET.schedule.name));
    const pausedAt = Date.now();
    const sampling = new AbortController();
    const samples = traffic.sampleUntil(sampling.signal);
    await traffic.drainSends();
    const unfinished = await untilAllEnded(baton, DRAIN_LIMIT_MS);
    sampling.abort();
    await samples;
    await supervisor.stop(30_000);
    log(`soak ${options.driver}: fleet stopped (exits ${JSON.stringify(Object.fromEntries(supervisor.exits))}); checking`);

    const entries = readLedger(ledgerDir);
    const report = checkSoak({
      entries,
      jobs: await retry(() => allFullJobs(baton)),
      schedules: [{ name: FLEET.schedule.name, everyMs: FLEET.schedule.everyMs, from: startedAt + TICK_EDGE_MS, to: pausedAt - TICK_EDGE_MS }],
      rateLimits: [{ scope: 'queue', name: FLEET.limited.name, limit: FLEET.limited.rate.limit, periodMs: FLEET.limited.rate.periodMs }],
      explainedCancelReason: CANCEL_REASON,
      abandonAfterMs: FLEET.drainTimeout + FLEET.abortGrace,
      freezeStallsAll: options.driver === 'sqlite',
    });
    const title = `soak ${options.driver}, ${options.minutes} min, seed ${options.seed}`;
    const png = await renderPng(timelineSvg(entries, { title }), join(options.dir, 'timeline.png'));
    const faults = options.faults ? ` --faults ${options.faults.join(',')}` : '';
    const text = [`${title}: npm run soak -- --minutes ${options.minutes} --driver ${options.driver} --seed ${options.seed}${faults}`, formatReport(report)].join('\n');
    writeFileSync(join(options.dir, 'report.txt'), `${text}\n`);
    return { report, plan, text, png, unfinished };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

/** The soak's database: the client's URL, each worker slot's, and on PostgreSQL the cluster and the proxies. */
interface SoakDatabase {
  clientUrl: string;
  workerUrl(slot: number): string;
  cluster?: ThrowawayCluster;
  proxies?: TcpProxy[];
}

async function openDatabase(options: SoakOptions, cleanups: Array<() => Promise<void> | void>): Promise<SoakDatabase> {
  if (options.driver === 'sqlite') {
    const url = `sqlite:${join(options.dir, 'soak.db')}`;
    return { clientUrl: url, workerUrl: () => url };
  }
  const cluster = await createCluster('baton_soak');
  cleanups.push(() => cluster.drop());
  const proxies = await Promise.all(Array.from({ length: FLEET.workers }, () => startTcpProxy({ host: '127.0.0.1', port: cluster.port })));
  cleanups.push(async () => void (await Promise.all(proxies.map((p) => p.close()))));
  return {
    cluster,
    proxies,
    clientUrl: `${cluster.url}?schema=soak&application_name=soak_client`,
    workerUrl: (slot) => `postgres://postgres@127.0.0.1:${proxies[slot]!.port}/postgres?schema=soak&application_name=soak_w${slot}`,
  };
}

/** Calls `fn` until it resolves (every 500 ms, for up to 2 minutes): the database may be restarting. */
async function retry<T>(fn: () => Promise<T>): Promise<T> {
  for (let deadline = Date.now() + 120_000; ; ) {
    try {
      return await fn();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(500);
    }
  }
}

/**
 * Waits until no job is queued or running (waiting ones are queued), polling every second.
 * @returns how many still were when `limitMs` ran out (0 when all ended)
 */
async function untilAllEnded(baton: Baton, limitMs: number): Promise<number> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const counts = await retry(() => baton.queueCounts());
    const open = counts.filter((c) => c.state === 'queued' || c.state === 'running').reduce((n, c) => n + c.count, 0);
    if (open === 0 || Date.now() > deadline) return open;
    await sleep(1_000);
  }
}
