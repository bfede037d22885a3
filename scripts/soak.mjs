#!/usr/bin/env node
/**
 * `npm run soak -- --minutes N --driver postgres|sqlite [--seed S]`: runs the soak (the
 * `soak` vitest project, test/soak/fleet.soak.test.ts) for N minutes on one driver, and
 * prints its report. Exit code: vitest's (0 when no invariant was violated).
 */
import { spawnSync } from 'node:child_process';
import { Command, InvalidArgumentError, Option } from 'commander';

const positive = (name) => (value) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive number`);
  return value;
};
const program = new Command('npm run soak --')
  .description('the fleet under the nemesis, checked (issue 34)')
  .option('--minutes <n>', 'how long the traffic and the faults run', positive('--minutes'), '30')
  .addOption(new Option('--driver <driver>', 'the database').choices(['postgres', 'sqlite']).default('postgres'))
  .option('--seed <n>', 'the nemesis plan\'s seed (default: drawn and printed)', (v) => {
    if (!/^\d+$/.test(v)) throw new InvalidArgumentError('--seed must be a non-negative integer');
    return v;
  })
  .parse();
const { minutes, driver, seed } = program.opts();
const env = { ...process.env, BATON_SOAK_MINUTES: minutes, BATON_SOAK_DRIVER: driver, ...(seed === undefined ? {} : { BATON_SOAK_SEED: seed }) };
const { status } = spawnSync('npx', ['vitest', 'run', '--project', 'soak'], { stdio: 'inherit', env });
process.exit(status ?? 1);
