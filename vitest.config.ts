import { spawnSync } from 'node:child_process';
import { defineConfig } from 'vitest/config';

/**
 * Two projects run the same behaviour tests: `sqlite` and `postgres`
 * (BATON_TEST_DRIVER). Files named `*.sqlite.test.ts` / `*.postgres.test.ts` hold
 * what is specific to one driver. Without a reachable PostgreSQL the postgres
 * project is left out with a loud message — except under CI=true, where that fails.
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

const shared = {
  testTimeout: 60_000,
  hookTimeout: 30_000,
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
        : [{ extends: true, test: { ...shared, name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/**/*.postgres.test.ts'], env: { BATON_TEST_DRIVER: 'sqlite' } } }]),
      ...(postgresUp
        ? [{ extends: true, test: { ...shared, name: 'postgres', include: ['test/**/*.test.ts'], exclude: ['test/**/*.sqlite.test.ts'], env: { BATON_TEST_DRIVER: 'postgres', BATON_TEST_DATABASE_URL: postgresUrl } } }]
        : []),
    ],
  },
});
