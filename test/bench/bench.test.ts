/**
 * The benchmark code runs (issue 4: "the test suite only checks that the benchmark
 * code runs on a tiny size"). No timing is asserted: each run must exit 0 and print
 * its table with a row for every workload and no FAILED cell.
 *
 * - `npm run bench -- --tiny --driver <this project's driver>` (Baton's own bench),
 *   with the storage floor (bench/floor) and every drain row's share of it.
 * - `npm run bench -- --tiny --only history --driver <driver>` (the opt-in history
 *   workload: 2 rounds of 300 jobs; on PostgreSQL also on a throwaway stock cluster
 *   when pg_createcluster is installed, else a note says it was not run).
 * - `bench/compare/run.ts --tiny --reps 1 --only W1,W2,W3,W4` (Baton on both drivers
 *   beside graphile-worker, pg-boss and BullMQ; FLOOR comes with W2), in the postgres project only: it
 *   runs every system whatever the project, so once is enough, and it needs
 *   PostgreSQL. It also needs bench/compare's own node_modules and Redis: without
 *   them it is skipped with the reason printed — except under CI=true, where that
 *   fails (.ci/run installs them and starts Redis).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const driver = process.env.BATON_TEST_DRIVER === 'postgres' ? 'postgres' : 'sqlite';
const postgresUrl = process.env.BATON_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const redisHost = process.env.BATON_BENCH_REDIS_HOST || '127.0.0.1';
const redisPort = Number(process.env.BATON_BENCH_REDIS_PORT || 6379);

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command args` from the repo root to its end, in its own process group so
 * the safety-net timeout kills npm and the bench's children together.
 */
function run(command: string, args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: REPO_ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // The benches use the test's PostgreSQL; their logs stay silent.
      env: { ...process.env, BATON_BENCH_DATABASE_URL: postgresUrl, BATON_LOG_LEVEL: 'silent' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-50_000)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** What a failed run printed, for the assertion message. */
const explain = (r: Run) => `exit ${r.code ?? r.signal}\n--- stdout ---\n${r.stdout.slice(-6_000)}\n--- stderr (tail) ---\n${r.stderr.slice(-6_000)}`;

/** The markdown table rows (lines starting with `|`) of a run's stdout, minus its header separator. */
const tableRows = (stdout: string) => stdout.split('\n').filter((line) => line.startsWith('|') && !/^\|[\s|-]+\|$/.test(line));

/** Resolves '' when Redis answers PING at host:port, else why not. */
function redisProblem(): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: redisHost, port: redisPort });
    const done = (problem: string) => {
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(3_000, () => done(`Redis at ${redisHost}:${redisPort} did not answer within 3 s`));
    socket.on('error', (error) => done(`Redis at ${redisHost}:${redisPort} does not answer (${error.message})`));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.setEncoding('utf8').on('data', (data: string) => done(data.startsWith('+PONG') ? '' : `Redis at ${redisHost}:${redisPort} answered ${JSON.stringify(data.trim())} to PING`));
  });
}

describe(`benchmarks on a tiny size (${driver})`, () => {
  it(
    `npm run bench -- --tiny --driver ${driver} exits 0 and prints a row for every workload`,
    async () => {
      // ~135–155 s on PostgreSQL at load 24 (2 cores, CPU hogs and another suite beside it), the floor ~1–2 s of it.
      const r = await run('npm', ['run', '--silent', 'bench', '--', '--tiny', '--driver', driver], 175_000);
      expect(r.code, explain(r)).toBe(0);
      expect(r.stdout, explain(r)).toContain(`## Baton bench (${driver}`);
      const rows = tableRows(r.stdout);
      expect(rows[0], explain(r)).toMatch(/^\| workload +\| figure +\| measured +\| share of floor +\| target +\| met\? +\|$/);
      for (const workload of ['1. enqueue', '2. floor', '2. drain', '3. start latency', '4. cancel latency', '5. SIGTERM hand-off', '6. peak RSS', '8. many running', '9. flow control', '10. start-up']) {
        expect(rows.some((row) => row.startsWith(`| ${workload} `)), `no "${workload}" row\n${explain(r)}`).toBe(true);
      }
      const floors = rows.filter((row) => row.startsWith('| 2. floor '));
      expect(floors.length, explain(r)).toBe(driver === 'postgres' ? 3 : 2);
      for (const row of floors) expect(row, explain(r)).toMatch(/ jobs\/s \([\d.,]+ µs\/job\)/);
      const reference = driver === 'postgres' ? /\d% of 1×(10|50)/ : /\d% of lean/;
      for (const row of rows.filter((line) => line.startsWith('| 2. drain '))) expect(row, `no share of floor\n${explain(r)}`).toMatch(reference);
      expect(r.stdout, explain(r)).not.toContain('FAILED');
    },
    200_000,
  );

  it(
    `npm run bench -- --tiny --only backlog --driver ${driver} (opt-in) exits 0 and prints its rows`,
    async () => {
      const r = await run('npm', ['run', '--silent', 'bench', '--', '--tiny', '--only', 'backlog', '--driver', driver], 150_000);
      expect(r.code, explain(r)).toBe(0);
      const rows = tableRows(r.stdout).filter((row) => row.startsWith('| 7. backlog '));
      expect(rows.length, explain(r)).toBe(4);
      expect(r.stdout, explain(r)).not.toContain('FAILED');
    },
    180_000,
  );

  it(
    `npm run bench -- --tiny --only history --driver ${driver} exits 0 and prints the history rows`,
    async () => {
      const r = await run('npm', ['run', '--silent', 'bench', '--', '--tiny', '--only', 'history', '--driver', driver], 120_000);
      expect(r.code, explain(r)).toBe(0);
      const rows = tableRows(r.stdout);
      const label = driver === 'postgres' ? 'server as it is' : 'sqlite';
      expect(rows.some((row) => row.startsWith('| 9. history ') && row.includes(`${label}: slowest steady rate`) && row.includes('of 2 rounds')), explain(r)).toBe(true);
      expect(rows.some((row) => row.startsWith('| 9. history ') && row.includes(`${label}: slowest whole-round rate of 2 rounds`)), explain(r)).toBe(true);
      expect(rows.some((row) => row.startsWith('| 9. history ') && row.includes(`${label}: sizes after`)), explain(r)).toBe(true);
      expect(r.stdout, explain(r)).not.toContain('FAILED');
    },
    150_000,
  );

  // Runs every system whichever the project: once is enough, in the project that has PostgreSQL.
  if (driver === 'postgres') {
    it(
      'bench/compare --tiny --reps 1 --only W1,W2,W3,W4 exits 0 and prints a row for every workload and a column per system',
      async (ctx) => {
        const problems = [
          ...(existsSync(`${REPO_ROOT}/bench/compare/node_modules`) ? [] : ['bench/compare/node_modules is missing (npm ci --prefix bench/compare)']),
          ...[await redisProblem()].filter(Boolean),
        ];
        if (problems.length) {
          const reason = `bench/compare cannot run: ${problems.join('; ')}`;
          if (process.env.CI === 'true') throw new Error(`${reason} — under CI it must (.ci/run installs and starts them)`);
          console.warn(`\n!!!!!!!!\n!! SKIPPING the bench/compare tiny run: ${reason}\n!!!!!!!!\n`);
          ctx.skip(reason);
        }
        const r = await run(process.execPath, ['--conditions=baton-source', '--import', 'tsx', 'bench/compare/run.ts', '--tiny', '--reps', '1', '--only', 'W1,W2,W3,W4'], 200_000);
        expect(r.code, explain(r)).toBe(0);
        expect(r.stdout, explain(r)).toContain('## Baton vs graphile-worker, pg-boss, BullMQ');
        const rows = tableRows(r.stdout);
        const header = rows[0] ?? '';
        for (const system of ['baton sqlite', 'baton postgres', 'graphile-worker', 'pg-boss', 'bullmq', 'baton sqlite share of floor', 'baton postgres share of floor']) {
          expect(header, `no "${system}" column\n${explain(r)}`).toContain(`| ${system} `);
        }
        expect(rows.filter((row) => row.startsWith('| FLOOR ')).length, explain(r)).toBe(5);
        expect(rows.find((row) => row.startsWith('| W2 ')), explain(r)).toMatch(/\d% of lean.*\d% of 1×10/);
        // W3's start floor and the enqueue's commit (the fsync floor): a figure per Baton driver, none for a peer.
        for (const row of rows.filter((line) => /^\| W3 +\| (start floor|the enqueue's commit)/.test(line))) expect(row, explain(r)).toMatch(/^\| W3 +\|[^|]+\| ms ↓ +\| [\d.]+ +\| [\d.]+ +\| — /);
        expect(rows.filter((line) => /^\| W3 +\| (start floor|the enqueue's commit)/.test(line)).length, explain(r)).toBe(6);
        for (const workload of ['W1', 'FLOOR', 'W2', 'W3', 'W4', 'RSS', 'START']) {
          expect(rows.some((row) => row.startsWith(`| ${workload} `)), `no ${workload} row\n${explain(r)}`).toBe(true);
        }
        expect(r.stdout, explain(r)).not.toContain('FAILED');
        expect(r.stdout, explain(r)).not.toMatch(/\*\*[^*]+: not run\*\*/); // a system whose server did not answer
      },
      240_000,
    );
  }
});
