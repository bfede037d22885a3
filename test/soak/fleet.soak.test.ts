/**
 * The soak (issue 34): the fleet of four worker processes under the nemesis, checked by
 * the checker (soak.ts). Its own vitest project, `soak`, run alone after the others:
 * `npm run soak -- --minutes N --driver postgres|sqlite [--seed S]` runs one driver for N
 * minutes; `npm test` runs 3 minutes on each driver. Settings come from the environment:
 * `BATON_SOAK_MINUTES` (default 3), `BATON_SOAK_DRIVER` (`sqlite`, `postgres`, or both by
 * default), `BATON_SOAK_SEED` (default: drawn, and printed so the run can be replayed).
 * The ledger, the worker logs, the report and the PNG timeline stay in
 * test-artifacts/soak/<driver>-<time>/.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterSkipReason } from '../helpers/pg-cluster.js';
import { formatReport } from './check-soak.js';
import type { FaultKind } from './ledger-events.js';
import { FAULT_KINDS } from './nemesis-plan.js';
import { runSoak } from './soak.js';

const minutes = Number(process.env.BATON_SOAK_MINUTES ?? 3);
const seed = process.env.BATON_SOAK_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.BATON_SOAK_SEED);
const only = process.env.BATON_SOAK_DRIVER;
const faults = process.env.BATON_SOAK_FAULTS?.split(',').map((f) => f.trim()) as FaultKind[] | undefined;
const unknown = faults?.filter((f) => !FAULT_KINDS.includes(f));
if (unknown?.length) throw new Error(`BATON_SOAK_FAULTS: unknown fault kind(s) ${unknown.join(', ')}; the kinds are ${FAULT_KINDS.join(', ')}`);
const postgresSkip = process.env.BATON_FAULTS_SKIP || clusterSkipReason;

describe.each([
  { driver: 'sqlite' as const, skip: '' },
  { driver: 'postgres' as const, skip: postgresSkip },
].filter((d) => only === undefined || only === d.driver))('soak on $driver', ({ driver, skip }) => {
  it.skipIf(Boolean(skip))(`${minutes} min under the nemesis: every invariant holds${skip ? ` (skipped: ${skip})` : ''}`, { timeout: minutes * 60_000 + 900_000 }, async () => {
    const dir = join(process.cwd(), 'test-artifacts', 'soak', `${driver}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    const result = await runSoak({ driver, minutes, seed, dir, ...(faults ? { faults } : {}), log: (line) => console.log(line) });
    console.log(`${result.text}\nreport: ${join(dir, 'report.txt')}\ntimeline: ${result.png}`);
    expect(result.report.violations, formatReport(result.report)).toEqual([]);
    expect(result.unfinished).toBe(0);
    expect(result.report.counts.jobs).toBeGreaterThan(minutes * 60 * 20);
  });
});
