import type { Clock } from '../clock.js';
import { NotFoundError } from '../errors.js';
import { DEFINITION_NAME } from '../validation.js';
import type { ServiceRecord, Store } from '../store/store.js';

/** A stored service as users read it. */
export interface ServiceInfo {
  name: string;
  paused: boolean;
  /** Start time of the last successful run. */
  lastRunAt: Date | null;
  /** When it is due next; null: not again until triggered (or never run yet). */
  nextRunAt: Date | null;
  lastError: string | null;
  lastErrorAt: Date | null;
  /** Consecutive failed runs. */
  failures: number;
  /** The worker holding its lease now (running it), else null. */
  holder: string | null;
  holderUntil: Date | null;
}

/** `baton.services`: inspect and steer services from any process. */
export interface ServiceAdmin {
  list(): Promise<ServiceInfo[]>;
  /** @throws NotFoundError */
  get(name: string): Promise<ServiceInfo>;
  /** Not run while paused (a run in progress finishes). @throws NotFoundError */
  pause(name: string): Promise<void>;
  /** @throws NotFoundError */
  resume(name: string): Promise<void>;
  /** Due at once: next run = now. Workers notice within the service's maxWait (at once in this process). @throws NotFoundError */
  trigger(name: string): Promise<void>;
}

const date = (ms: number | null) => (ms === null ? null : new Date(ms));

/** The public view of a service row. */
export function serviceInfo(row: ServiceRecord): ServiceInfo {
  return {
    name: row.name,
    paused: row.paused,
    lastRunAt: date(row.lastRunAt),
    nextRunAt: date(row.nextRunAt),
    lastError: row.lastError,
    lastErrorAt: date(row.lastErrorAt),
    failures: row.failures,
    holder: row.holder,
    holderUntil: date(row.holderUntil),
  };
}

/**
 * Builds {@link ServiceAdmin}. `wake` is called after a change so this process's
 * runners look again at once.
 */
export function serviceAdmin(deps: { store: Store; clock: Clock; wake: () => void }): ServiceAdmin {
  const missing = (name: unknown) => new NotFoundError(`no service named ${JSON.stringify(name)} (a service is stored when a worker running it starts)`);
  /** A name no service can have is not found, without asking the store (a NUL would fail on PostgreSQL). */
  const named = (name: unknown): string => {
    if (typeof name !== 'string' || !DEFINITION_NAME.test(name)) throw missing(name);
    return name;
  };
  const check = (found: boolean, name: string) => {
    if (!found) throw missing(name);
    deps.wake();
  };
  return {
    list: async () => (await deps.store.serviceList({ now: deps.clock.now() })).map(serviceInfo),
    async get(name) {
      const row = (await deps.store.serviceList({ now: deps.clock.now() })).find((s) => s.name === name);
      if (!row) throw missing(name);
      return serviceInfo(row);
    },
    pause: async (name) => check(await deps.store.serviceSetPaused({ name: named(name), paused: true, now: deps.clock.now() }), name),
    resume: async (name) => check(await deps.store.serviceSetPaused({ name: named(name), paused: false, now: deps.clock.now() }), name),
    trigger: async (name) => check(await deps.store.serviceTrigger({ name: named(name), now: deps.clock.now() }), name),
  };
}
