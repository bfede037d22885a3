/**
 * SQLite files the CLI may not write. Tests run as root, which chmod does not stop:
 * the CLI then runs as `nobody` (setpriv), for whom a 0444 file in a 0555 directory
 * really is read-only; run as anyone else, the chmods alone make it so.
 */
import { execFile } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { CLI_FIXTURE, REPO_ROOT, runCli, type CliRun } from '../helpers/cli.js';
import { NODE_TS_ARGS } from '../helpers/child.js';

const asRoot = process.getuid?.() === 0;

/** `baton <args>` as a user who cannot write the database (nobody when this runs as root). */
function runCliUnprivileged(args: string[]): Promise<CliRun> {
  const node = [process.execPath, ...NODE_TS_ARGS, CLI_FIXTURE, ...args];
  const [file, argv] = asRoot ? ['setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', ...node]] : [node[0]!, node.slice(1)];
  return new Promise((resolve, reject) => {
    const child = execFile(file, argv, { cwd: REPO_ROOT, env: { ...process.env, BATON_LOG_LEVEL: 'silent' }, timeout: 90_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') return reject(Object.assign(error, { stdout, stderr }));
      resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

describe('SQLite: files the CLI cannot or should not write', () => {
  it('a file that is not a database: exit 1 (a database error, as docs/cli.md says) with one baton: line', async () => {
    const db = tempDatabase();
    writeFileSync(db.path, 'hello, I am a text file\n'.repeat(100));
    const runs = await Promise.all([runCli(['jobs', '--database', db.url]), runCli(['enqueue', 'plain', '--database', db.url])]);
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr.trim().split('\n')).toEqual([`baton: cannot open database ${db.url}: file is not a database`]);
    }
  });

  it('jobs, job, schedules and services read a 0444 file in a 0555 directory as a user who cannot write either; nothing is written', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const job = await baton.enqueue('plain', { n: 7 });
    await baton.schedule('nightly', { task: 'plain', cron: '0 3 * * *' });
    await baton.close();
    const before = readFileSync(db.path);
    const files = readdirSync(db.dir).sort();
    chmodSync(db.path, 0o444);
    chmodSync(db.dir, 0o555);
    try {
      const [list, one, schedules, services, listJson] = await Promise.all([
        runCliUnprivileged(['jobs', '--database', db.url]),
        runCliUnprivileged(['job', String(job.id), '--database', db.url]),
        runCliUnprivileged(['schedules', '--database', db.url]),
        runCliUnprivileged(['services', '--database', db.url]),
        runCliUnprivileged(['jobs', '--json', '--database', db.url]),
      ]);
      for (const run of [list, one, schedules, services, listJson]) expect(run.code, run.stderr).toBe(0);
      expect(list.stdout).toMatch(new RegExp(`^${job.id}\\s+plain\\s+default\\s+queued`, 'm'));
      expect(one.stdout).toMatch(/^payload\s+\{"n":7\}$/m);
      expect(schedules.stdout).toMatch(/^nightly\s+\S/m);
      expect(services.stdout.trim()).toBe('no services');
      expect((JSON.parse(listJson.stdout) as Array<{ id: number }>).map((j) => j.id)).toEqual([job.id]);

      // A write is refused as the database error it is, in one line.
      const enqueue = await runCliUnprivileged(['enqueue', 'plain', '--database', db.url]);
      expect(enqueue.code).toBe(1);
      expect(enqueue.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      chmodSync(db.dir, 0o755);
      chmodSync(db.path, 0o644);
    }
    expect(readdirSync(db.dir).sort()).toEqual(files);
    expect(readFileSync(db.path).equals(before)).toBe(true);
  });

  it('a directory given as the database: exit 1, one line naming it a directory and a file to give instead, for readers and writers', async () => {
    const db = tempDatabase();
    const url = `sqlite:${db.dir}`;
    const runs = await Promise.all([runCli(['jobs', '--database', url]), runCli(['migrate', '--database', url])]);
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr.trim().split('\n')).toEqual([`baton: cannot open database ${url}: ${db.dir} is a directory, not a database file (give a file in it, e.g. sqlite:${db.dir}/baton.db)`]);
    }
    expect(readdirSync(db.dir)).toEqual([]);
  });

  it('a missing file is not created by a reading command: one line saying so, exit 1', async () => {
    const db = tempDatabase();
    const run = await runCli(['jobs', '--database', db.url]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([`baton: cannot open database ${db.url}: the file does not exist; reading does not create one (a worker, \`baton migrate\` or an enqueue does)`]);
    expect(readdirSync(db.dir)).toEqual([]);
  });
});
