/**
 * 40 worker processes on a server with max_connections = 100 (docs/postgres.md, "Connections
 * and PgBouncer"). The test makes a throwaway cluster of the machine's
 * PostgreSQL (pg_createcluster, a free port, trust authentication,
 * max_connections = 100 — the main server is not reconfigured) and drops it at the
 * end, passed or not. It runs in the `faults` project, alone.
 *
 * The workers are test/fixtures/fleet-worker.mjs, plain JavaScript on the built
 * package (dist/, built by `npm ci`'s prepare; `npm run build` after changing src/),
 * each with its own `application_name`, concurrency 1 and `?pool_size=1`, the setting
 * docs/postgres.md gives a fleet this large (the default pool of 4 budgets 5 a process). Each
 * claims one `hold` job and keeps it running until the test opens a gate, so all 40
 * have claimed, heartbeat and LISTEN at once when their connections are counted
 * (pg_stat_activity, per application_name). Then 400 short jobs run through the
 * fleet while the count is sampled; every job completes, and after a graceful stop
 * no worker connection is left.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Baton } from 'baton-jobs';
import { ChildHandle } from '../helpers/child.js';
import { openBaton, tempDir } from '../helpers/db.js';
import { until } from '../helpers/events.js';
import { clusterSkipReason, createCluster, type ThrowawayCluster } from '../helpers/pg-cluster.js';

const WORKERS = 40;
const MAX_CONNECTIONS = 100;
/** Connections a worker process holds with `?pool_size=1`: one pool connection and the LISTEN connection. */
const PER_PROCESS = 2;
const SHORT_JOBS = 400;
/** Workers started at once: 40 Node processes starting together would starve a 2-core machine. */
const START_BATCH = 4;

const skipReason = process.env.BATON_FAULTS_SKIP || clusterSkipReason;
let cluster: ThrowawayCluster | undefined;

// Whatever happened, the throwaway cluster goes (after the workers: hooks run last-registered first).
afterAll(async () => {
  await cluster?.drop();
});

const FIXTURE = fileURLToPath(new URL('../fixtures/fleet-worker.mjs', import.meta.url));
const children: ChildHandle[] = [];
afterAll(async () => {
  for (const child of children) {
    if (child.process.exitCode === null && child.process.signalCode === null) {
      child.kill('SIGKILL');
      await child.exited;
    }
  }
});

/** A fleet worker process on `database`, ready to claim. */
async function startWorker(database: string): Promise<ChildHandle> {
  const child = new ChildHandle(spawn(process.execPath, [FIXTURE, JSON.stringify({ database })], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, BATON_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  children.push(child);
  await child.waitFor((m) => m.type === 'ready', 'ready', 120_000);
  return child;
}

/** Client connections per application_name on the cluster. */
async function connections(admin: pg.Client): Promise<Map<string, number>> {
  const { rows } = await admin.query<{ app: string; n: number }>(
    "SELECT application_name AS app, count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1");
  return new Map(rows.map((r) => [r.app, r.n]));
}

const completed = async (baton: Baton) => (await baton.queueCounts()).filter((c) => c.state === 'completed').reduce((n, c) => n + c.count, 0);

describe.skipIf(Boolean(skipReason))(`${WORKERS} worker processes on max_connections = ${MAX_CONNECTIONS}${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it(`each holds at most ${PER_PROCESS} connections; together they fit with headroom, run every job, and leave none behind`, async () => {
    cluster = await createCluster('baton_fleet', { max_connections: MAX_CONNECTIONS });
    const base = cluster.url;
    const admin = new pg.Client({ connectionString: base, application_name: 'fleet_admin' });
    await admin.connect();
    try {
      expect((await admin.query('SHOW max_connections')).rows[0].max_connections).toBe(String(MAX_CONNECTIONS));
      const baton = await openBaton({ database: `${base}?schema=fleet&application_name=fleet_client` });

      const gate = `${tempDir()}/gate`;
      await baton.enqueueMany(Array.from({ length: WORKERS }, () => ({ task: 'hold', payload: { gate } })));
      const workers: ChildHandle[] = [];
      for (let i = 0; i < WORKERS; i += START_BATCH) {
        workers.push(...(await Promise.all(Array.from({ length: Math.min(START_BATCH, WORKERS - i) }, (_, j) =>
          startWorker(`${base}?schema=fleet&pool_size=1&application_name=fleet_w${i + j}`)))));
      }
      // Every worker runs one hold job (concurrency 1): all claim, heartbeat and LISTEN at once.
      await Promise.all(workers.map((w) => w.waitFor((m) => m.type === 'claimed' && m.task === 'hold', 'a hold job', 120_000)));

      const peak = new Map<string, number>();
      const sample = async () => {
        for (const [app, n] of await connections(admin)) peak.set(app, Math.max(peak.get(app) ?? 0, n));
      };
      await sample();
      writeFileSync(gate, '');
      await baton.enqueueMany(Array.from({ length: SHORT_JOBS }, (_, n) => ({ task: 'echo', payload: { n } })));
      await until(async () => {
        await sample();
        return (await completed(baton)) === WORKERS + SHORT_JOBS;
      }, `all ${WORKERS + SHORT_JOBS} jobs completed`, 240_000);

      const perWorker = Array.from({ length: WORKERS }, (_, i) => peak.get(`fleet_w${i}`) ?? 0);
      const fleetPeak = perWorker.reduce((a, b) => a + b, 0);
      console.log(`${WORKERS} workers: peak connections per process ${Math.max(...perWorker)}, fleet (sum of per-process peaks) ${fleetPeak} of max_connections ${MAX_CONNECTIONS}`);
      expect(Math.max(...perWorker)).toBeLessThanOrEqual(PER_PROCESS);
      expect(Math.min(...perWorker)).toBeGreaterThanOrEqual(1); // every worker was seen connected
      expect(fleetPeak).toBeLessThanOrEqual(WORKERS * PER_PROCESS);
      // Headroom: what is left beside the fleet and the superuser's reserve still takes an admin session and a client process.
      const reserved = Number((await admin.query('SHOW superuser_reserved_connections')).rows[0].superuser_reserved_connections);
      expect(MAX_CONNECTIONS - reserved - fleetPeak).toBeGreaterThanOrEqual(10);
      const errors = workers.flatMap((w) => w.stderr.split('\n').filter((line) => /too many clients|remaining connection slots/.test(line)));
      expect(errors).toEqual([]);

      for (const w of workers) w.kill('SIGTERM');
      const exits = await Promise.all(workers.map((w) => w.exited));
      expect(exits.map((e) => e.code)).toEqual(Array(WORKERS).fill(0));
      // A backend leaves pg_stat_activity a moment after its client has gone.
      await until(async () => ![...(await connections(admin)).keys()].some((app) => app.startsWith('fleet_w')), 'no worker connection is left', 30_000);
      await baton.close();
    } finally {
      await admin.end();
    }
  });
});
