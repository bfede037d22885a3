import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, createBaton, defineTask } from 'baton-jobs';
import { SchemaBehindError, type Migration } from '../../src/store/migrate.js';
import { migrations as postgresMigrations } from '../../src/store/postgres/migrations/index.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { migrations as sqliteMigrations } from '../../src/store/sqlite/migrations/index.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { openBaton, tempDatabase, testDriver, testLogger } from '../helpers/db.js';
import { spawnClient, listFullJobs } from '../helpers/client.js';
import { rawQuery } from '../helpers/raw.js';

/** This driver's migrations: its baseline, then any appended after it. */
const migrations = testDriver === 'postgres' ? postgresMigrations : sqliteMigrations;
/** The baseline's version: the schema of the first release, created in one step. */
const BASELINE = 24;

/** A migration appended after this code's last one (a table of its own). */
const appended: Migration = {
  version: Math.max(...migrations.map((m) => m.version)) + 1,
  name: 'appended',
  sql: testDriver === 'postgres' ? 'CREATE TABLE :schema.appended (id integer PRIMARY KEY)' : 'CREATE TABLE appended (id INTEGER PRIMARY KEY)',
};

const stores: Array<SqliteStore | PostgresStore> = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** This driver's store on `db` with a migration list of the test's own (not yet migrated). */
function storeWith(db: ReturnType<typeof tempDatabase>, list: Migration[]): SqliteStore | PostgresStore {
  const store = db.driver === 'sqlite'
    ? new SqliteStore(db.path, { migrations: list })
    : new PostgresStore(db.url.replace(/[?&]schema=[^&]*/, ''), { schema: new URL(db.url).searchParams.get('schema')!, migrations: list });
  stores.push(store);
  return store;
}

const noop = defineTask('noop', { handler: async (payload: { n: number }) => payload.n });

describe('opening the database: migrations', () => {
  const migrationRows = (db: ReturnType<typeof tempDatabase>) =>
    rawQuery<{ version: number; name: string }>(db, 'SELECT version, name FROM baton_migrations ORDER BY version');
  const addMigration = (db: ReturnType<typeof tempDatabase>, version: number, name: string, breaking: boolean) =>
    db.driver === 'sqlite'
      ? rawQuery(db, 'INSERT INTO baton_migrations (version, name, breaking, applied_at) VALUES (?, ?, ?, ?)', [version, name, breaking ? 1 : 0, Date.now()])
      : rawQuery(db, 'INSERT INTO baton_migrations (version, name, breaking) VALUES (?, ?, ?)', [version, name, breaking]);
  /** Processes that open a new database at once: ten on PostgreSQL (issue 3), five SQLite files. */
  const PROCESSES = testDriver === 'postgres' ? 10 : 5;

  it('several processes opening one new database (or empty schema) at once all succeed; the schema is applied once', async () => {
    const db = tempDatabase();
    const barrier = join(db.dir, 'go');
    const clients = Array.from({ length: PROCESSES }, (_, n) =>
      spawnClient({ database: db.url, op: 'enqueue', task: 'noop', payload: { n }, barrier, barrierBeforeOpen: true }),
    );
    await Promise.all(clients.map((c) => c.waitFor((m) => m.type === 'waiting', 'waiting')));
    if (db.driver === 'sqlite') expect(existsSync(db.path)).toBe(false);
    writeFileSync(barrier, '');
    const answers = await Promise.all(clients.map((c) => c.waitFor((m) => m.type === 'result' || m.type === 'error', 'the enqueue answer')));
    for (const [n, answer] of answers.entries()) expect(answer, `process ${n}: ${JSON.stringify(answer)}; stderr ${clients[n]!.stderr}`).toMatchObject({ type: 'result' });
    for (const client of clients) expect((await client.exited).code).toBe(0);

    const rows = await migrationRows(db);
    expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version));

    const baton = await openBaton({ database: db.url });
    const jobs = await listFullJobs(baton, { limit: 100 });
    expect(jobs.map((j) => (j.payload as { n: number }).n).sort((a, b) => a - b)).toEqual(Array.from({ length: PROCESSES }, (_, n) => n));
  });

  it('each driver starts from one baseline, at the same version; a new database is migrated to it in one step', async () => {
    for (const list of [sqliteMigrations, postgresMigrations]) {
      expect(list[0]).toMatchObject({ version: BASELINE, name: 'baseline' });
      expect(list.every((m, i) => i === 0 || m.version > list[i - 1]!.version)).toBe(true);
    }
    const db = tempDatabase();
    await (await openBaton({ database: db.url })).close();
    const rows = await migrationRows(db);
    expect(rows[0]).toEqual({ version: BASELINE, name: 'baseline' });
    expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version));
  });

  it('a migration appended after the baseline is applied alone, once, to a database at the baseline; its jobs stay', async () => {
    const db = tempDatabase();
    const first = await openBaton({ database: db.url });
    const job = await first.enqueue(noop, { n: 1 });
    await first.close();

    // A read-only check names the migration the schema lacks; migrating applies it.
    const next = storeWith(db, [...migrations, appended]);
    const behind = await next.schemaCheck().catch((e: unknown) => e);
    expect(behind).toBeInstanceOf(SchemaBehindError);
    expect((behind as Error).message).toMatch(new RegExp(`lacks migration ${appended.version} \\(appended\\); .*run \`baton migrate\``));
    await next.migrate();
    await next.migrate();
    expect((await migrationRows(db)).map((r) => r.version)).toEqual([...migrations.map((m) => m.version), appended.version]);
    expect(await rawQuery(db, 'SELECT count(*) AS n FROM appended')).toEqual([{ n: db.driver === 'sqlite' ? 0 : '0' }]);
    await expect(next.schemaCheck()).resolves.toBeUndefined();

    // The code of before (without it) still opens the database: the appended version is not breaking.
    const again = await openBaton({ database: db.url });
    expect(await again.getJob(job.id)).toEqual(job);
  });

  it('a database holding part of the pre-release chain the baseline replaced is refused, and nothing is applied', async () => {
    const db = tempDatabase();
    const old = 'CREATE TABLE :schema.prerelease (id integer)';
    await storeWith(db, [{ version: 1, name: 'jobs', sql: db.driver === 'sqlite' ? old.replace(':schema.', '') : old }]).migrate();
    const error = await createBaton({ database: db.url, logger: testLogger() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(new RegExp(`pre-release Baton schema \\(versions up to 1, jobs\\), older than the baseline \\(version ${BASELINE}\\).*recreate the database`));
    expect(await migrationRows(db)).toEqual([{ version: 1, name: 'jobs' }]);
    await expect(rawQuery(db, 'SELECT 1 FROM jobs')).rejects.toThrow(/jobs/);
  });

  it('a database the pre-release chain took to its end (versions 1 to 24 recorded) is at the baseline: it opens, and nothing is applied', async () => {
    const db = tempDatabase();
    await (await openBaton({ database: db.url })).close();
    for (let version = 1; version < BASELINE; version++) await addMigration(db, version, `pre-release-${version}`, version === 10);
    const before = await migrationRows(db);
    const baton = await openBaton({ database: db.url });
    expect((await baton.enqueue(noop, { n: 1 })).state).toBe('queued');
    expect(await migrationRows(db)).toEqual(before);
  });

  it('reopening a migrated database is a no-op', async () => {
    const db = tempDatabase();
    const first = await openBaton({ database: db.url });
    const job = await first.enqueue(noop, { n: 1 });
    const before = await migrationRows(db);
    await first.close();
    const again = await openBaton({ database: db.url });
    expect(await migrationRows(db)).toEqual(before);
    expect(await again.getJob(job.id)).toEqual(job);
  });

  it('a database whose schema has a breaking version newer than the code knows → ConfigError on open', async () => {
    const db = tempDatabase();
    await (await openBaton({ database: db.url })).close();
    await addMigration(db, 999, 'from-the-future', true);
    const error = await createBaton({ database: db.url, logger: testLogger() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('config');
    expect((error as Error).message).toContain('999');
    expect((error as Error).message).toMatch(/upgrade/);
  });

  it('a newer but non-breaking version does not stop older code from opening', async () => {
    const db = tempDatabase();
    await (await openBaton({ database: db.url })).close();
    await addMigration(db, 998, 'additive', false);
    const baton = await openBaton({ database: db.url });
    expect((await baton.enqueue(noop, { n: 1 })).state).toBe('queued');
  });
});
