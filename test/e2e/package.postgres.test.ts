import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildHandle } from '../helpers/child.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { tempDatabase } from '../helpers/db.js';

/**
 * The package as a user gets it: `npm pack`, then a project outside the repository
 * that installs the tarball and `pg` only — no better-sqlite3, no tsx (optional peer
 * dependencies) — and runs a worker on PostgreSQL through the installed `baton` binary.
 *
 * The pack runs in a copy of the package's sources, not in the repository: its
 * prepack script empties dist/, which the CLI tests running beside this one execute.
 * npm installs from the registry (`--prefer-offline`: its cache first), so this file
 * is slow; it runs in the postgres project only.
 */

const SLOW = 600_000;
const PACKAGE = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; version: string; files: string[] };

let root: string;
let app: string;
let packed: { filename: string; size: number; entryCount: number; files: Array<{ path: string }> };

/** npm's environment without what `npm test` exported for this repository (npm_config_*, npm_package_*). */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE_OPTIONS'));
  return { ...env, ...extra };
}

function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env: cleanEnv(env), timeout: SLOW, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') return reject(Object.assign(error, { stdout, stderr }));
      resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
    });
  });
}

async function npm(args: string[], cwd: string) {
  const result = await run('npm', args, cwd);
  if (result.code !== 0) throw new Error(`npm ${args.join(' ')} exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** `node_modules/.bin/baton …` in the app, silent logs. */
const baton = (args: string[]) => run(process.execPath, [join(app, 'node_modules', PACKAGE.name, 'bin', 'baton.js'), ...args], app, { BATON_LOG_LEVEL: 'silent' });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'baton-package-'));
  const source = join(root, 'source');
  mkdirSync(source);
  for (const entry of ['package.json', 'README.md', 'LICENSE', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'scripts', 'src']) {
    cpSync(join(REPO_ROOT, entry), join(source, entry), { recursive: true });
  }
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(source, 'node_modules'), 'dir');
  const report = JSON.parse(await npm(['pack', '--json', '--pack-destination', root], source)) as Array<typeof packed>;
  packed = report[0]!;

  app = join(root, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'baton-package-test-app', version: '1.0.0', private: true, type: 'module' }));
  const pgVersion = (JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', 'pg', 'package.json'), 'utf8')) as { version: string }).version;
  await npm(['install', '--no-audit', '--no-fund', '--prefer-offline', join(root, packed.filename), `pg@${pgVersion}`], app);

  writeFileSync(join(app, 'tasks.js'), `import { defineTask } from '${PACKAGE.name}';
export const double = defineTask('double', { handler: async ({ n }) => n * 2 });
`);
  writeFileSync(join(app, 'tasks.ts'), `import { defineTask } from '${PACKAGE.name}';
export const triple = defineTask('triple', { handler: async ({ n }: { n: number }) => n * 3 });
`);
  writeFileSync(join(app, 'enqueue.js'), `import { createBaton } from '${PACKAGE.name}';
import { double } from './tasks.js';
const baton = await createBaton({ database: process.argv[2] });
const job = await baton.enqueue(double, { n: 21 });
console.log(JSON.stringify({ id: job.id }));
await baton.close();
`);
  writeFileSync(join(app, 'open-sqlite.js'), `import { createBaton, ConfigError } from '${PACKAGE.name}';
try {
  await (await createBaton({ database: 'sqlite:./baton.db' })).close();
  console.log(JSON.stringify({ opened: true }));
} catch (error) {
  console.log(JSON.stringify({ configError: error instanceof ConfigError, message: error.message }));
}
`);
}, SLOW);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe(`the packed ${PACKAGE.name} tarball`, () => {
  it('holds the build, the binary and the sources (source maps, dashboard assets); no tests, no stale build output', () => {
    expect(packed.filename).toBe(`${PACKAGE.name}-${PACKAGE.version}.tgz`);
    const paths = packed.files.map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'bin/baton.js', 'dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js', 'src/http/dashboard/index.html']));
    const outside = paths.filter((p) => !['package.json', 'README.md', 'LICENSE'].includes(p) && !PACKAGE.files.some((dir) => p.startsWith(`${dir}/`)));
    expect(outside).toEqual([]);
    expect(paths.filter((p) => /(^|\/)(test|tests|bench|examples|node_modules)\/|\.test\.[jt]s$/.test(p))).toEqual([]);
    // Every built entry comes from a source file, the rest are the bundle's shared chunks (the prepack script empties dist/ first).
    const sources = new Set(paths.filter((p) => p.startsWith('src/') && p.endsWith('.ts')).map((p) => p.slice('src/'.length, -'.ts'.length)));
    const stale = paths.filter((p) => p.startsWith('dist/') && p.endsWith('.js') && !p.startsWith('dist/chunks/')).filter((p) => !sources.has(p.slice('dist/'.length, -'.js'.length)));
    expect(stale).toEqual([]);
    expect(packed.size).toBeLessThan(1024 * 1024);
  });

  it('installs with pg alone: no better-sqlite3, tsx or esbuild in the project', () => {
    for (const absent of ['better-sqlite3', 'tsx', 'esbuild']) expect(existsSync(join(app, 'node_modules', absent)), absent).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'pg'))).toBe(true);
    expect(existsSync(join(app, 'node_modules', '.bin', 'baton'))).toBe(true);
  });

  it('runs a worker on PostgreSQL (installed binary, plain-JS tasks file) that completes a job the project enqueued', async () => {
    const db = tempDatabase();
    const enqueued = await run(process.execPath, ['enqueue.js', db.url], app);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const { id } = JSON.parse(enqueued.stdout) as { id: number };

    const worker = new ChildHandle(
      spawn(process.execPath, [join(app, 'node_modules', PACKAGE.name, 'bin', 'baton.js'), 'worker', '--tasks', 'tasks.js', '--database', db.url, '--json'], {
        cwd: app,
        env: cleanEnv({ BATON_LOG_LEVEL: 'warn' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    try {
      await worker.waitFor((m) => m.event === 'job:completed' && m.jobId === id, `job ${id} completed`, 120_000);
      worker.kill('SIGTERM');
      expect((await worker.exited).code, worker.stderr).toBe(0);
    } finally {
      if (worker.process.exitCode === null && worker.process.signalCode === null) worker.kill('SIGKILL');
    }

    const shown = await baton(['job', String(id), '--json', '--database', db.url]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, task: 'double', state: 'completed', result: 42 });
  }, SLOW);

  it('names the missing optional peer in one line: better-sqlite3 for sqlite:, tsx for a .ts tasks file', async () => {
    const library = await run(process.execPath, ['open-sqlite.js'], app);
    expect(library.code, library.stderr).toBe(0);
    expect(JSON.parse(library.stdout)).toEqual({ configError: true, message: 'the SQLite driver needs better-sqlite3: npm install better-sqlite3@12' });

    const cli = await baton(['jobs', '--database', 'sqlite:./baton.db']);
    expect(cli.code).not.toBe(0);
    expect(cli.stderr.trim().split('\n')).toEqual([expect.stringMatching(/the SQLite driver needs better-sqlite3: npm install better-sqlite3@12$/)]);

    const ts = await baton(['enqueue', 'triple', '--payload', '{"n":1}', '--tasks', 'tasks.ts', '--database', tempDatabase().url]);
    expect(ts.code).not.toBe(0);
    expect(ts.stderr.trim().split('\n')).toEqual([expect.stringMatching(/cannot load tasks file tasks\.ts: a TypeScript tasks file needs tsx: npm install tsx@4$/)]);
    expect(existsSync(join(app, 'baton.db'))).toBe(false);
  }, SLOW);
});
