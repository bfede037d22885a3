/**
 * One worker process of the soak's fleet (soak.ts starts four, through the supervisor).
 * Argument: JSON {@link FleetWorkerConfig}. Runs the fleet's tasks, schedule and service
 * (fleet-tasks.ts) with the fleet's lease settings, and `withLock` sections beside them;
 * records every handler run in its own ledger file. Writes `{"type":"ready"}` on stdout
 * once its worker has started. SIGTERM stops it gracefully (drain, then hand-back), then
 * it exits 0; logs at `warn` and above go to `<ledgerDir>/worker-<slot>-<pid>.log`.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { createBaton } from 'baton-jobs';
import { FenceClient } from './fence-store.js';
import { FLEET, fleetDefinitions, lockSections } from './fleet-tasks.js';
import { LedgerWriter } from './ledger.js';

/** What soak.ts passes a worker process. */
export interface FleetWorkerConfig {
  /** The database URL (on PostgreSQL through this slot's TCP proxy). */
  database: string;
  ledgerDir: string;
  /** The worker slot (0..FLEET.workers−1). */
  slot: number;
  /** The fencing store's base URL. */
  fenceUrl: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as FleetWorkerConfig;
const name = `w${config.slot}-${process.pid}`;
const ledger = new LedgerWriter(config.ledgerDir, 'worker');
const logger = pino({ level: 'warn', base: { worker: name } }, pino.destination({ dest: join(config.ledgerDir, `worker-${config.slot}-${process.pid}.log`), sync: false }));
const baton = await createBaton({ database: config.database, migrate: false, logger });
const { tasks, schedules, services } = fleetDefinitions(ledger, name);
const worker = baton.worker({
  tasks,
  schedules,
  services,
  workerId: name,
  retention: false,
  concurrency: FLEET.concurrency,
  leaseTtl: FLEET.leaseTtl,
  heartbeatInterval: FLEET.heartbeatInterval,
  rescueInterval: FLEET.rescueInterval,
  pollInterval: FLEET.pollInterval,
  drainTimeout: FLEET.drainTimeout,
  abortGrace: FLEET.abortGrace,
});
const locks = new AbortController();
const sections = lockSections(baton, new FenceClient(config.fenceUrl), locks.signal);

let stopping: Promise<void> | undefined;
process.on('SIGTERM', () => {
  stopping ??= (async () => {
    locks.abort();
    await worker.stop();
    await sections;
    await baton.close();
    ledger.close();
    logger.flush();
    process.exit(0);
  })();
});
await worker.start();
process.stdout.write(`${JSON.stringify({ type: 'ready', pid: process.pid })}\n`);
