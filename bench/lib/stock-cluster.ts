import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A throwaway PostgreSQL cluster with the server's stock settings (autovacuum on). */
export interface StockCluster {
  /** `postgres://postgres@127.0.0.1:PORT/postgres`: schemas go in its `postgres` database. */
  url: string;
  /** Stops and removes the cluster and its files. Idempotent. */
  drop(): Promise<void>;
}

/**
 * Creates and starts a PostgreSQL cluster of its own (on the next port no cluster uses,
 * pg_createcluster's pick) with every
 * setting at its default (Debian's `pg_createcluster`, trust authentication), so a
 * benchmark can compare the main server as it is (here: autovacuum off) with a stock
 * one, without touching the main server. The version is the main server's
 * (`BATON_BENCH_PG_VERSION`, default 15). Drop it when done; {@link StockCluster.drop}
 * is safe to call twice.
 * @throws Error when `pg_createcluster` is not installed (Debian's postgresql-common) or the cluster does not start
 */
export async function createStockCluster(): Promise<StockCluster> {
  if (!existsSync('/usr/bin/pg_createcluster')) throw new Error('pg_createcluster is not installed (Debian package postgresql-common): the stock-settings run needs it');
  const version = process.env.BATON_BENCH_PG_VERSION ?? '15';
  const name = `baton_bench_${randomBytes(4).toString('hex')}`;
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await run('pg_dropcluster', ['--stop', version, name], { timeout: 120_000 }).catch(() => undefined);
  };
  try {
    await run('pg_createcluster', [version, name, '--start', '--', '--auth-local=trust', '--auth-host=trust'], { timeout: 180_000 });
    // pg_lsclusters: Ver Cluster Port Status Owner Data-directory Log-file
    const { stdout } = await run('pg_lsclusters', ['--no-header', version, name]);
    const port = Number(stdout.trim().split(/\s+/)[2]);
    if (!Number.isInteger(port)) throw new Error(`pg_lsclusters gave no port for cluster ${name}: ${stdout.trim()}`);
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, drop };
  } catch (error) {
    await drop();
    throw error;
  }
}
