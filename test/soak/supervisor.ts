/**
 * Keeps the soak's worker slots filled: starts one fleet-worker.ts process per slot,
 * records each exit in the ledger (`process-exit`: its runs end there at the latest) and
 * what the process wrote on stderr (`worker-<slot>-<pid>.stderr` beside the ledger), and
 * starts a replacement, as a process manager would after a crash or a deploy's SIGTERM.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { spawnTs, type ChildHandle } from '../helpers/child.js';
import type { FleetWorkerConfig } from './fleet-worker.js';
import type { LedgerWriter } from './ledger.js';

const WORKER = fileURLToPath(new URL('./fleet-worker.ts', import.meta.url));

/** A replacement is started this long after an exit (ms): what a process manager's restart delay gives. */
const RESTART_DELAY_MS = 500;

/** The fleet's worker processes. */
export class Supervisor {
  readonly #slots: Array<ChildHandle | undefined>;
  readonly #watching = new Set<Promise<void>>();
  #stopping = false;
  /** Exits seen, by cause: `code 0`, `code 1`, `SIGKILL`, … */
  readonly exits = new Map<string, number>();

  /**
   * @param workers - slots, ≥ 1
   * @param configOf - the process's configuration for a slot (its database URL may differ per slot: the proxy)
   * @param ledger - where `process-exit` is recorded (the soak's own writer)
   */
  constructor(workers: number, private readonly configOf: (slot: number) => FleetWorkerConfig, private readonly ledger: LedgerWriter) {
    this.#slots = Array.from({ length: workers }, () => undefined);
  }

  /** Starts every slot's process; resolves once each has reported ready. @throws when one exits before it is ready */
  async start(): Promise<void> {
    await Promise.all(this.#slots.map((_, slot) => this.#spawn(slot)));
  }

  /** The pid filling `slot` now; undefined between an exit and the replacement. */
  pidOf(slot: number): number | undefined {
    const child = this.#slots[slot];
    return child && child.process.exitCode === null && child.process.signalCode === null ? child.pid : undefined;
  }

  /**
   * Stops the fleet gracefully: no more replacements, SIGTERM to every live process, and
   * waits for them to exit (SIGKILL after `timeoutMs`).
   * @returns the exit of each slot's last process
   */
  async stop(timeoutMs: number): Promise<Array<{ code: number | null; signal: NodeJS.Signals | null } | undefined>> {
    this.#stopping = true;
    const live = this.#slots.map((child, slot) => (this.pidOf(slot) === undefined ? undefined : child));
    for (const child of live) child?.kill('SIGTERM');
    const exits = await Promise.all(
      live.map(async (child) => {
        if (!child) return undefined;
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        const exit = await child.exited;
        clearTimeout(timer);
        return exit;
      }),
    );
    await Promise.all(this.#watching);
    return exits;
  }

  async #spawn(slot: number): Promise<void> {
    const child = spawnTs(WORKER, [JSON.stringify(this.configOf(slot))]);
    this.#slots[slot] = child;
    const watch = this.#watch(slot, child);
    this.#watching.add(watch);
    void watch.finally(() => this.#watching.delete(watch));
    await child.waitFor((m) => m.type === 'ready', `worker slot ${slot} ready`, 120_000);
  }

  async #watch(slot: number, child: ChildHandle): Promise<void> {
    const { code, signal } = await child.exited;
    this.ledger.record({ kind: 'process-exit', targetPid: child.pid, code, signal });
    if (child.stderr !== '') writeFileSync(join(this.ledger.dir, `worker-${slot}-${child.pid}.stderr`), child.stderr);
    const cause = signal ?? `code ${code}`;
    this.exits.set(cause, (this.exits.get(cause) ?? 0) + 1);
    if (this.#stopping) return;
    await delay(RESTART_DELAY_MS);
    // A replacement that fails to start (the database away) exits, and this watch of it starts the next.
    if (!this.#stopping) await this.#spawn(slot).catch(() => undefined);
  }
}
