#!/usr/bin/env node
/**
 * `npm run soak -- --minutes N --driver postgres|sqlite [--seed S] [--faults K,…]`: runs the soak (the
 * `soak` vitest project, test/soak/fleet.soak.test.ts) for N minutes on one driver, and
 * prints its report. Exit code: vitest's (0 when no invariant was violated).
 */
import { spawnSync } from 'node:child_process';
import { Command, InvalidArgumentError, Option } from 'commander';

/** The nemesis's fault kinds (test/soak/nemesis-plan.ts, FAULT_KINDS). */
const KINDS = ['sigkill', 'sigterm', 'sigstop', 'net-cut', 'db-restart', 'cpu-hog'];
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
  .option('--faults <kinds>', `only these fault kinds, comma-separated: ${KINDS.join(', ')} (default: all the driver allows)`, (v) => {
    const unknown = v.split(',').map((k) => k.trim()).filter((k) => !KINDS.includes(k));
    if (unknown.length > 0) throw new InvalidArgumentError(`unknown fault kind(s) ${unknown.join(', ')}`);
    return v;
  })
  .parse();
const { minutes, driver, seed, faults } = program.opts();
const env = {
  ...process.env,
  BATON_SOAK_MINUTES: minutes,
  BATON_SOAK_DRIVER: driver,
  ...(seed === undefined ? {} : { BATON_SOAK_SEED: seed }),
  ...(faults === undefined ? {} : { BATON_SOAK_FAULTS: faults }),
};
const { status } = spawnSync('npx', ['vitest', 'run', '--project', 'soak'], { stdio: 'inherit', env });
process.exit(status ?? 1);
