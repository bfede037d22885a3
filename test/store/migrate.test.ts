import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, createBaton, defineTask } from 'baton-jobs';
import { migrations as postgresMigrations } from '../../src/store/postgres/migrations/index.js';
import { migrations as sqliteMigrations } from '../../src/store/sqlite/migrations/index.js';
import { openBaton, tempDatabase, testDriver, testLogger } from '../helpers/db.js';
import { spawnClient, listFullJobs } from '../helpers/client.js';
import { rawQuery } from '../helpers/raw.js';

/** This driver's migrations (PostgreSQL has one SQLite lacks). */
const migrations = testDriver === 'postgres' ? postgresMigrations : sqliteMigrations;

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
