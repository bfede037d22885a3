/**
 * The nemesis at work: walks a plan (nemesis-plan.ts) against the live fleet, injecting
 * each fault when it is due (nemesis-faults.ts) and recording what was done in the ledger.
 */
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import type { LedgerWriter } from './ledger.js';
import { injectFault, pause, type FaultTargets } from './nemesis-faults.js';
import type { PlannedFault } from './nemesis-plan.js';

/**
 * Injects every fault of `plan` at its time (ms after `startedAt`, ms since the epoch), one
 * after another, and records each in `ledger` (stamped with when it began). A fault whose
 * slot has no live process at that moment is skipped (recorded nowhere: nothing was done).
 * Stops early when `signal` aborts; a freeze or cut under way is still undone.
 * @returns the faults injected
 * @throws what a fault throws (a restart that failed): the soak cannot go on without its database
 */
export async function runNemesis(plan: readonly PlannedFault[], targets: FaultTargets, ledger: LedgerWriter, startedAt: number, signal: AbortSignal): Promise<number> {
  let injected = 0;
  for (const fault of plan) {
    const wait = startedAt + fault.at - Date.now();
    if (wait > 0) await pause(wait, signal);
    if (signal.aborted) break;
    const event = await injectFault(fault, targets, signal);
    if (event) {
      ledger.record(event, event.startedAt);
      injected++;
    }
  }
  return injected;
}

/**
 * Keeps every core busy for `ms`: one busy-looping process per core, killed when the time
 * is up or `signal` aborts. Resolves once they have exited.
 */
export async function cpuHog(ms: number, signal?: AbortSignal): Promise<void> {
  const hogs = cpus().map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  await pause(ms, signal);
  await Promise.all(
    hogs.map(
      (hog) =>
        new Promise<void>((resolve) => {
          if (hog.exitCode !== null || hog.signalCode !== null) return resolve();
          hog.once('exit', () => resolve());
          hog.kill('SIGKILL');
        }),
    ),
  );
}
