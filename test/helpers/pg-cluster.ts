/**
 * A throwaway PostgreSQL cluster of the machine's own PostgreSQL (Debian's
 * `pg_createcluster`), on a free port, with trust authentication: for tests that must
 * reconfigure, restart or starve a server without touching the main one.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { freePort } from './pgbouncer.js';

const run = promisify(execFile);

/** The PostgreSQL version whose clusters are made: `BATON_FAULTS_PG_VERSION`, default 15. */
export const clusterVersion = process.env.BATON_FAULTS_PG_VERSION ?? '15';

/** Why no throwaway cluster can be made here, or '' when one can. */
export const clusterSkipReason = existsSync('/usr/bin/pg_createcluster') ? '' : 'pg_createcluster is not installed';

/** A running throwaway cluster. */
export interface ThrowawayCluster {
  /** Its name (`<prefix>_<random>`). */
  name: string;
  port: number;
  /** `postgres://postgres@127.0.0.1:PORT/postgres`. */
  url: string;
  /** Restarts the server (fast shutdown: open connections are closed), resolving once it accepts connections again. */
  restart(): Promise<void>;
  /** Stops and removes the cluster, data and all. Dropping twice does nothing. */
  drop(): Promise<void>;
}

/**
 * Creates and starts a cluster (takes seconds: initdb).
 * @param prefix - names it: letters, digits and `_`
 * @param settings - server settings (`-o name=value` each), e.g. `{ max_connections: 100 }`
 * @throws when pg_createcluster fails (not installed, no free port)
 */
export async function createCluster(prefix: string, settings: Record<string, string | number> = {}): Promise<ThrowawayCluster> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const port = await freePort();
  const options = Object.entries(settings).flatMap(([key, value]) => ['-o', `${key}=${value}`]);
  let dropped = false;
  await run('pg_createcluster', [clusterVersion, name, '--port', String(port), '--start', ...options, '--', '--auth-local=trust', '--auth-host=trust'], { timeout: 180_000 });
  return {
    name,
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async restart() {
      await run('pg_ctlcluster', ['--skip-systemctl-redirect', clusterVersion, name, 'restart', '--mode', 'fast'], { timeout: 120_000 });
      await run('pg_isready', ['-h', '127.0.0.1', '-p', String(port), '-t', '60'], { timeout: 90_000 });
    },
    async drop() {
      if (dropped) return;
      dropped = true;
      await run('pg_dropcluster', ['--stop', clusterVersion, name], { timeout: 120_000 });
    },
  };
}
