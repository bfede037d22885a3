/**
 * Injects one planned fault (nemesis-plan.ts) into the live fleet and says what was done,
 * as the ledger's `fault` event. The fleet's processes, proxies and database are reached
 * through {@link FaultTargets}, so the runner that walks the plan (next session) and the
 * tests share this code.
 *
 * A freeze always ends with SIGCONT and a cut with a restore, even when the soak is being
 * aborted (`signal`): no process is left frozen and no worker cut off.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { CutMode } from '../helpers/tcp-proxy.js';
import type { LedgerEvent } from './ledger-events.js';
import type { PlannedFault } from './nemesis-plan.js';

/** How the nemesis reaches what it hits. */
export interface FaultTargets {
  /** The pid of the live process filling worker slot `slot` now; undefined when it has none (between a death and its restart). */
  pidOf(slot: number): number | undefined;
  /** The TCP proxy between slot `slot`'s worker and the database (PostgreSQL only). */
  proxyOf?(slot: number): { cut(mode?: CutMode): Promise<void>; restore(): Promise<void> };
  /** Restarts the database server; resolves once it answers again (PostgreSQL only). */
  restartDatabase?(): Promise<void>;
  /** Keeps every core busy for `ms`, resolving when the load has stopped (or at once on `signal`). */
  cpuHog?(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The `fault` event of an injected fault. */
export type FaultEvent = Extract<LedgerEvent, { kind: 'fault' }>;

/** Waits `ms`, or less when `signal` aborts (no throw). */
export const pause = (ms: number, signal?: AbortSignal): Promise<unknown> => delay(ms, undefined, signal ? { signal } : {}).catch(() => undefined);

/**
 * Injects `fault`: SIGKILL or SIGTERM the slot's process; SIGSTOP it, then SIGCONT after
 * `durationMs`; cut its proxy (blackhole: packets dropped, as in a partition), then restore
 * it; restart the database; run the CPU hog.
 * @param signal - aborts a freeze, cut or hog early (it is still undone)
 * @returns the fault's event, times in ms since the epoch; null when the slot had no live process (nothing done)
 * @throws Error when `targets` cannot do this kind of fault (no proxy, no database, no hog), or a restart fails
 */
export async function injectFault(fault: PlannedFault, targets: FaultTargets, signal?: AbortSignal): Promise<FaultEvent | null> {
  const pid = fault.target === null ? null : targets.pidOf(fault.target);
  if (fault.target !== null && pid === undefined) return null;
  const startedAt = Date.now();
  const done = (): FaultEvent => ({ kind: 'fault', fault: fault.kind, targetPid: pid ?? null, startedAt, endedAt: Date.now() });
  switch (fault.kind) {
    case 'sigkill':
    case 'sigterm':
      process.kill(pid!, fault.kind === 'sigkill' ? 'SIGKILL' : 'SIGTERM');
      return { ...done(), endedAt: startedAt };
    case 'sigstop':
      process.kill(pid!, 'SIGSTOP');
      try {
        await pause(fault.durationMs, signal);
      } finally {
        try {
          process.kill(pid!, 'SIGCONT');
        } catch {
          // it died while frozen (SIGKILL from elsewhere): nothing to wake
        }
      }
      return done();
    case 'net-cut': {
      const proxy = required(targets.proxyOf, fault, 'no proxy per worker')(fault.target!);
      await proxy.cut('blackhole');
      try {
        await pause(fault.durationMs, signal);
      } finally {
        await proxy.restore();
      }
      return done();
    }
    case 'db-restart':
      await required(targets.restartDatabase, fault, 'no database server')();
      return done();
    case 'cpu-hog':
      await required(targets.cpuHog, fault, 'no CPU hog')(fault.durationMs, signal);
      return done();
  }
}

function required<T>(fn: T | undefined, fault: PlannedFault, why: string): T {
  if (fn === undefined) throw new Error(`cannot inject ${fault.kind}: the fleet has ${why}`);
  return fn;
}
