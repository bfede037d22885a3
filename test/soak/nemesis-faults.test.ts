/**
 * Injecting the nemesis's faults: SIGKILL and SIGTERM end the slot's process; a freeze stops
 * it (state T) for its duration and always wakes it, also when aborted early; a cut cuts the
 * slot's proxy (blackhole) and restores it; the database restart and the hog go to the
 * fleet's own functions; a slot with no live process is skipped; a fleet without the means
 * of a fault says so. The processes hit are idle Node children (no load).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChildHandle } from '../helpers/child.js';
import { until } from '../helpers/events.js';
import { injectFault, type FaultTargets } from './nemesis-faults.js';
import type { PlannedFault } from './nemesis-plan.js';

/** An idle Node process, killed after the test body. */
async function withIdleChild(body: (child: ChildHandle) => Promise<void>): Promise<void> {
  const child = new ChildHandle(spawn(process.execPath, ['-e', 'setInterval(() => {}, 60_000)'], { stdio: ['ignore', 'pipe', 'pipe'] }));
  try {
    await body(child);
  } finally {
    if (child.process.exitCode === null && child.process.signalCode === null) {
      child.process.kill('SIGCONT');
      child.kill('SIGKILL');
      await child.exited;
    }
  }
}

/** The process state letter of `pid` in /proc (R, S, T for stopped, …). */
const stateOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];

const fault = (kind: PlannedFault['kind'], durationMs = 0, target: number | null = 0): PlannedFault => ({ at: 0, kind, target, durationMs });
const slotOf = (child: ChildHandle): FaultTargets => ({ pidOf: (slot) => (slot === 0 ? child.pid : undefined) });

describe('injecting a fault', () => {
  it('SIGKILL and SIGTERM end the slot\'s process, an instant fault on its pid', async () => {
    for (const kind of ['sigkill', 'sigterm'] as const) {
      await withIdleChild(async (child) => {
        const event = await injectFault(fault(kind), slotOf(child));
        expect(event).toEqual({ kind: 'fault', fault: kind, targetPid: child.pid, startedAt: expect.any(Number), endedAt: event!.startedAt });
        expect(await child.exited).toEqual({ code: null, signal: kind.toUpperCase() });
      });
    }
  });

  it('a freeze stops the process for its duration, then wakes it', async () => {
    await withIdleChild(async (child) => {
      const injecting = injectFault(fault('sigstop', 300), slotOf(child));
      await until(() => stateOf(child.pid) === 'T', 'the child is stopped');
      const event = await injecting;
      expect(stateOf(child.pid)).not.toBe('T');
      expect(event!.endedAt - event!.startedAt).toBeGreaterThanOrEqual(300 - 1);
      expect(event).toMatchObject({ fault: 'sigstop', targetPid: child.pid });
    });
  });

  it('an aborted freeze still wakes the process, at once', async () => {
    await withIdleChild(async (child) => {
      const abort = new AbortController();
      const injecting = injectFault(fault('sigstop', 600_000), slotOf(child), abort.signal);
      await until(() => stateOf(child.pid) === 'T', 'the child is stopped');
      abort.abort();
      await injecting;
      expect(stateOf(child.pid)).not.toBe('T');
    });
  });

  it('a cut blackholes the slot\'s proxy, then restores it; database and hog faults go to the fleet', async () => {
    const calls: string[] = [];
    const targets: FaultTargets = {
      pidOf: () => 4242,
      proxyOf: (slot) => ({ cut: async (mode) => void calls.push(`cut ${slot} ${mode}`), restore: async () => void calls.push(`restore ${slot}`) }),
      restartDatabase: async () => void calls.push('restart'),
      cpuHog: async (ms) => void calls.push(`hog ${ms}`),
    };
    expect(await injectFault(fault('net-cut', 10, 2), targets)).toMatchObject({ fault: 'net-cut', targetPid: 4242 });
    expect(await injectFault(fault('db-restart', 0, null), targets)).toMatchObject({ fault: 'db-restart', targetPid: null });
    expect(await injectFault(fault('cpu-hog', 5, null), targets)).toMatchObject({ fault: 'cpu-hog', targetPid: null });
    expect(calls).toEqual(['cut 2 blackhole', 'restore 2', 'restart', 'hog 5']);
  });

  it('skips a slot with no live process, and refuses a fault the fleet has no means for', async () => {
    expect(await injectFault(fault('sigkill', 0, 3), { pidOf: () => undefined })).toBeNull();
    await expect(injectFault(fault('db-restart', 0, null), { pidOf: () => 1 })).rejects.toThrow('cannot inject db-restart: the fleet has no database server');
  });
});
