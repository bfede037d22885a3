import { spawnSync } from 'node:child_process';
import { defineConfig } from 'vitest/config';

/**
 * Two projects run the same behaviour tests: `sqlite` and `postgres`
 * (BATON_TEST_DRIVER). Files named `*.sqlite.test.ts` / `*.postgres.test.ts` hold
 * what is specific to one driver. Without a reachable PostgreSQL the postgres
 * project is left out with a loud message — except under CI=true, where that fails.
 *
 * A third project, `faults` (test/faults/**, PostgreSQL only), restarts the
 * PostgreSQL server, which would break tests running beside it: `npm test` runs it
 * alone, after the other two (`vitest run --project sqlite --project postgres &&
 * vitest run --project faults`), and its `groupOrder` puts it after them in a plain
 * `vitest run` too. It always exists, so that command never fails for
 * want of a project; without PostgreSQL its tests are skipped with the reason in
 * BATON_FAULTS_SKIP.
 *
 * A fourth, `soak` (files named `*.soak.test.ts`), runs the fleet under the nemesis
 * (issue 34) for BATON_SOAK_MINUTES on each driver: last and alone, after `faults`.
 */
const postgresUrl = process.env.BATON_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

function postgresAnswers(): boolean {
  const probe = `const c = new (require('pg').Client)({ connectionString: process.argv[1], connectionTimeoutMillis: 3000 });
    c.connect().then(() => c.end()).then(() => process.exit(0), () => process.exit(1));`;
  return spawnSync(process.execPath, ['-e', probe, postgresUrl], { timeout: 10_000 }).status === 0;
}

const onlyDriver = process.env.BATON_TEST_DRIVER;
const wantPostgres = onlyDriver !== 'sqlite';
const postgresUp = wantPostgres && postgresAnswers();
if (wantPostgres && !postgresUp) {
  const message = `PostgreSQL does not answer at ${postgresUrl.replace(/:[^:@/]*@/, ':***@')}`;
  if (process.env.CI === 'true') throw new Error(`${message}: the postgres test project cannot run under CI`);
  console.warn(`\n!!!!!!!!\n!! ${message}: SKIPPING every PostgreSQL test. Start it or set BATON_TEST_DATABASE_URL.\n!!!!!!!!\n`);
}

/** Why the faults project cannot run here, or '' when it can. */
const faultsSkip = !wantPostgres ? 'BATON_TEST_DRIVER=sqlite' : !postgresUp ? 'PostgreSQL does not answer' : '';

/**
 * Timeouts only catch hangs; no passing test comes near them. They are sized for
 * CI's shared 2-core machine at load 10, where every child process (a worker, a CLI
 * run, a client) takes seconds just to start.
 */
const shared = {
  testTimeout: 120_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
};

export default defineConfig({
  resolve: { conditions: ['baton-source'] },
  ssr: { resolve: { conditions: ['baton-source'] } },
  test: {
    maxWorkers: 2,
    projects: [
      ...(onlyDriver === 'postgres'
        ? []
        : [{ extends: true, test: { ...shared, name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/**/*.postgres.test.ts', 'test/faults/**', 'test/**/*.soak.test.ts'], env: { BATON_TEST_DRIVER: 'sqlite' } } }]),
      ...(postgresUp
        ? [{ extends: true, test: { ...shared, name: 'postgres', include: ['test/**/*.test.ts'], exclude: ['test/**/*.sqlite.test.ts', 'test/faults/**', 'test/**/*.soak.test.ts'], env: { BATON_TEST_DRIVER: 'postgres', BATON_TEST_DATABASE_URL: postgresUrl } } }]
        : []),
      {
        extends: true,
        test: {
          ...shared,
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 60_000,
          fileParallelism: false,
          // Even a plain `vitest run` runs this group only after the others have finished.
          sequence: { groupOrder: 1 },
          env: { BATON_TEST_DRIVER: 'postgres', BATON_TEST_DATABASE_URL: postgresUrl, BATON_FAULTS_SKIP: faultsSkip },
        },
      },
      {
        extends: true,
        test: {
          ...shared,
          // The soak (test/soak/fleet.soak.test.ts, issue 34): four worker processes and the nemesis's
          // CPU hogs take the whole machine, so it runs alone, last; its PostgreSQL run makes a cluster
          // of its own. Each test sets its timeout from BATON_SOAK_MINUTES.
          name: 'soak',
          include: ['test/**/*.soak.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
          env: { BATON_FAULTS_SKIP: faultsSkip },
        },
      },
    ],
  },
});
