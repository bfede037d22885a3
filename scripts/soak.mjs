#!/usr/bin/env node
/**
 * `npm run soak -- --minutes N --driver postgres|sqlite [--seed S] [--faults K,…]`: runs the
 * soak (the `soak` vitest project, test/soak/fleet.soak.test.ts) for N minutes on one
 * driver, and prints its report. Exit code: vitest's (0 when no invariant was violated);
 * 1 with one line for a bad option, or when the PostgreSQL soak cannot make its cluster.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';

/** The nemesis's fault kinds (test/soak/nemesis-plan.ts, FAULT_KINDS); the last two need a server (PostgreSQL). */
const KINDS = ['sigkill', 'sigterm', 'sigstop', 'net-cut', 'db-restart', 'cpu-hog'];
const SERVER_KINDS = ['net-cut', 'db-restart'];

/** At least 2: no fault lands in the first 10 s or the last 40 s, and a freeze or a cut lasts 15–30 s. */
const minutes = (value) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 2) throw new InvalidArgumentError('--minutes must be a number, at least 2 (no fault lands in the first 10 s or the last 40 s; a freeze or a cut lasts 15–30 s)');
  return value;
};
const seed = (value) => {
  if (!/^\d+$/.test(value) || Number(value) > 2 ** 31 - 1) throw new InvalidArgumentError(`--seed must be an integer 0..${2 ** 31 - 1}`);
  return value;
};
const faults = (value) => {
  const kinds = value.split(',').map((k) => k.trim());
  const unknown = kinds.filter((k) => !KINDS.includes(k));
  if (unknown.length > 0) throw new InvalidArgumentError(`unknown fault kind(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')}; the kinds are ${KINDS.join(', ')}`);
  return kinds.join(',');
};
const program = new Command('npm run soak --')
  .description('the fleet of four workers under the nemesis, then the checker (docs/reliability.md)')
  .option('--minutes <n>', `how long the traffic and the faults run (faults land from 10 s until 40 s before the end)`, minutes, '30')
  .addOption(new Option('--driver <driver>', 'the database').choices(['postgres', 'sqlite']).default('postgres'))
  .option('--seed <n>', "the nemesis plan's seed (default: drawn and printed; it replays the faults, not the traffic)", seed)
  .option('--faults <kinds>', `only these fault kinds, comma-separated: ${KINDS.join(', ')} (default: all the driver allows; ${SERVER_KINDS.join(' and ')} need postgres)`, faults)
  .parse();
const options = program.opts();
const fail = (message) => program.error(`error: ${message}`);
const serverOnly = options.faults?.split(',').filter((k) => SERVER_KINDS.includes(k)) ?? [];
if (options.driver === 'sqlite' && serverOnly.length > 0) fail(`--faults ${serverOnly.join(',')} needs --driver postgres (SQLite has no server to cut off or restart)`);
if (options.driver === 'postgres' && !existsSync('/usr/bin/pg_createcluster')) fail("--driver postgres makes a throwaway cluster with Debian's pg_createcluster, which is not installed here (try --driver sqlite)");
const env = {
  ...process.env,
  BATON_SOAK_MINUTES: options.minutes,
  BATON_SOAK_DRIVER: options.driver,
  ...(options.seed === undefined ? {} : { BATON_SOAK_SEED: options.seed }),
  ...(options.faults === undefined ? {} : { BATON_SOAK_FAULTS: options.faults }),
};
const { status } = spawnSync('npx', ['vitest', 'run', '--project', 'soak'], { stdio: 'inherit', env });
process.exit(status ?? 1);
