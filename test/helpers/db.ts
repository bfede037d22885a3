import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import { createBaton, type Baton, type BatonOptions } from 'baton-jobs';

/** A temp directory removed after the current test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-test-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The driver this test run exercises (`BATON_TEST_DRIVER`, set per vitest project). */
export const testDriver: 'sqlite' | 'postgres' = process.env.BATON_TEST_DRIVER === 'postgres' ? 'postgres' : 'sqlite';

/** The PostgreSQL server tests use: `BATON_TEST_DATABASE_URL`. */
export const postgresUrl = process.env.BATON_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * A fresh database for one test, of the driver under test: a SQLite file in a temp
 * directory, or a PostgreSQL schema of its own (`?schema=t_<random>`, dropped after
 * the test). `dir` is a temp directory either way (ledgers, task files); `path` is
 * the SQLite file (meaningful on SQLite only).
 */
export function tempDatabase(): { url: string; path: string; dir: string; driver: 'sqlite' | 'postgres' } {
  const dir = tempDir();
  const path = join(dir, 'baton.db');
  if (testDriver === 'sqlite') return { url: `sqlite:${path}`, path, dir, driver: 'sqlite' };
  const schema = `t_${randomBytes(6).toString('hex')}`;
  cleanups.push(() => dropSchema(schema));
  const url = new URL(postgresUrl);
  url.searchParams.set('schema', schema);
  return { url: url.toString(), path, dir, driver: 'postgres' };
}

/**
 * Drops a test's schema. A process the test started may still be ending (a worker
 * child past its stop, a pool connection closing) and hold locks the drop needs:
 * PostgreSQL then may pick the drop as a deadlock's victim (40P01), and the drop is
 * tried again, up to 5 times.
 */
async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error;
      }
    }
  } finally {
    await client.end();
  }
}

/** A silent logger (set BATON_TEST_LOG=debug to see logs). */
export const testLogger = () => pino({ level: process.env.BATON_TEST_LOG ?? 'silent' });

/**
 * Opens a Baton on `url` (default: a fresh temp database) that is closed after the
 * test; every worker it made is stopped first. `observer` sees every store call
 * (op name, duration, error), e.g. to assert that no write happened.
 */
export async function openBaton(options: BatonOptions = {}, observer?: StoreObserver): Promise<Baton> {
  const baton = await createBaton({ database: options.database ?? tempDatabase().url, logger: testLogger(), ...options }, observer);
  cleanups.push(() => baton.close());
  return baton;
}

/**
 * Store operations a worker's background loops make on their own timers (claims,
 * heartbeat, registry, cancel poll, rescue, scheduler, services and the pruner, table
 * vacuum): a test asserting that a refused call made no store call ignores these.
 */
export const BACKGROUND_OPS: ReadonlySet<string> = new Set([
  'jobClaim', 'jobCompleteAndClaim', 'leaseExtendMany', 'workerUpsert', 'jobCancelRequests', 'jobRescueExpired', 'scheduleDue',
  'leaseAcquire', 'leaseRenew', 'leaseRelease', 'serviceEnsure', 'serviceGet', 'serviceRecord',
  'jobDeleteFinished', 'jobDeleteFinishedBeyond', 'jobTableStats', 'jobTableVacuum',
]);

/** `createBaton`'s second argument: called after every store operation. */
export type StoreObserver = NonNullable<Parameters<typeof createBaton>[1]>;

const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
