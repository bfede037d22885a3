/**
 * What the CLI does to the database before it knows it may: nothing. `baton serve`
 * refusing an open network API creates no database; reading commands migrate
 * nothing (a schema behind the code is refused, not upgraded) and, on PostgreSQL,
 * need no more than SELECT.
 */
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { StoreError } from 'baton-jobs';
import { openBaton, postgresUrl, tempDatabase, testDriver } from '../helpers/db.js';
import { rawQuery } from '../helpers/raw.js';
import { runCli } from '../helpers/cli.js';

const oneLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

/** Whether the test database exists at all: the SQLite file, or the PostgreSQL schema. */
async function databaseExists(db: ReturnType<typeof tempDatabase>): Promise<boolean> {
  if (db.driver === 'sqlite') return existsSync(db.path);
  const schema = new URL(db.url).searchParams.get('schema')!;
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    return (await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('CLI and the database', () => {
  it('serve --host 0.0.0.0 without a token refuses before it creates or migrates the database', async () => {
    const db = tempDatabase();
    const run = await runCli(['serve', '--host', '0.0.0.0', '--port', '0', '--database', db.url], {
      env: { BATON_ADMIN_TOKEN: '', BATON_API_TOKEN: '' },
    });
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toMatch(/^baton: refusing to serve on 0\.0\.0\.0 without a token/);
    expect(await databaseExists(db)).toBe(false);
  });

  it("serve refuses an empty --admin-token (it silently dropped BATON_ADMIN_TOKEN) and, on a non-loopback host, a blank or short token; before it creates the database (issue 31)", async () => {
    const db = tempDatabase();
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [['--admin-token', ''], { BATON_ADMIN_TOKEN: 'a-long-enough-admin-token' }, /^baton: --admin-token is empty: give a token, or leave it out/],
      [['--host', '0.0.0.0', '--admin-token', 'x'], {}, /^baton: refusing to serve on 0\.0\.0\.0 with an admin token of 1 characters: on a non-loopback host a token needs at least 16/],
      [['--host', '0.0.0.0'], { BATON_ADMIN_TOKEN: '    ' }, /^baton: BATON_ADMIN_TOKEN is blank/],
      [['--host', '0.0.0.0', '--admin-token', 'a-long-enough-admin-token', '--read-token', 'short'], {}, /^baton: refusing to serve on 0\.0\.0\.0 with a read token of 5 characters/],
    ];
    const runs = await Promise.all(cases.map(([flags, env]) => runCli(['serve', '--port', '0', ...flags, '--database', db.url], { env: { BATON_ADMIN_TOKEN: '', BATON_API_TOKEN: '', ...env } })));
    runs.forEach((run, i) => {
      expect(run.code, run.stderr).toBe(2);
      expect(oneLine(run.stderr)).toMatch(cases[i]![2]);
    });
    expect(await databaseExists(db)).toBe(false);
  });

  it('an empty --database (an unset shell variable) is refused naming database (exit 2), not taken for the default ./baton.db', async () => {
    const run = await runCli(['jobs', '--database', '']);
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toMatch(/^baton: option database: /);
  });

  it('jobs, job, schedules and services do not migrate: a schema missing a migration is refused (exit 1, one line), and stays as it was', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const job = await baton.enqueue('plain', null);
    await baton.close();
    const [last] = await rawQuery<{ version: number }>(db, 'SELECT max(version) AS version FROM baton_migrations');
    await rawQuery(db, 'DELETE FROM baton_migrations WHERE version = ?', [last!.version]);
    // With the baseline alone recorded, the ledger is left empty: the refusal says so.
    const [left] = await rawQuery<{ n: number | string }>(db, 'SELECT count(*) AS n FROM baton_migrations');
    const state = Number(left!.n) > 0 ? `lacks migration ${last!.version} ` : 'has no Baton schema';

    const runs = await Promise.all([['jobs'], ['job', String(job.id)], ['schedules'], ['services']].map((args) => runCli([...args, '--database', db.url])));
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(1);
      expect(oneLine(run.stderr)).toMatch(new RegExp(`^baton: .*${state}.*run \`baton migrate\``));
    }
    expect(await rawQuery(db, 'SELECT version FROM baton_migrations WHERE version = ?', [last!.version])).toEqual([]);
  });

  it('createBaton({ readOnly }) reads, refuses every write with StoreError, and writes nothing', async () => {
    const db = tempDatabase();
    const writer = await openBaton({ database: db.url });
    const job = await writer.enqueue('plain', { n: 2 });
    await writer.close();
    const reader = await openBaton({ database: db.url, readOnly: true });
    expect((await reader.listJobs()).map((j) => j.id)).toEqual([job.id]);
    expect(await reader.getJob(job.id)).toMatchObject({ id: job.id, state: 'queued' });
    await expect(reader.enqueue('plain', null)).rejects.toBeInstanceOf(StoreError);
    await expect(reader.cancel(job.id)).rejects.toBeInstanceOf(StoreError);
    await reader.close();
    const check = await openBaton({ database: db.url });
    expect((await check.listJobs()).map((j) => [j.id, j.state])).toEqual([[job.id, 'queued']]);
  });

  it.skipIf(testDriver !== 'postgres')('PostgreSQL: a role with only USAGE on the schema and SELECT on its tables can run jobs, job, schedules and services', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const job = await baton.enqueue('plain', { n: 1 });
    await baton.close();
    const schema = new URL(db.url).searchParams.get('schema')!;
    const role = `baton_reader_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      await admin.query(`GRANT USAGE ON SCHEMA "${schema}" TO ${role}`);
      await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA "${schema}" TO ${role}`);
      const url = new URL(db.url);
      url.username = role;
      const runs = await Promise.all([['jobs', '--json'], ['job', String(job.id), '--json'], ['schedules', '--json'], ['services', '--json']].map((args) => runCli([...args, '--database', url.toString()])));
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(runs[0]!.stdout) as Array<{ id: number }>).map((j) => j.id)).toEqual([job.id]);
      expect(JSON.parse(runs[1]!.stdout)).toMatchObject({ id: job.id, task: 'plain', payload: { n: 1 } });
      // The role really cannot write: enqueue is refused by the server.
      const enqueue = await runCli(['enqueue', 'plain', '--database', url.toString()]);
      expect(enqueue.code).toBe(1);
    } finally {
      await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });
});
