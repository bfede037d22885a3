import type { Logger } from 'pino';
import { BatonError, StoreError } from '../errors.js';
import type { LockWait } from './sqlite/busy.js';
import type { Store } from './store.js';

/** Called after every store operation: its name, duration in ms, and error if any. */
export type StoreObserver = (op: string, durationMs: number, error?: unknown) => void;

/**
 * Wraps a driver so every call is timed, logged at debug level, counted by the
 * observer, and its failures mapped to `StoreError { op }` in one place (Oban's
 * approach): drivers stay free of logging. BatonErrors thrown by a driver on
 * purpose (ConflictError, ConfigError) pass through unchanged.
 */
export function instrumentStore(store: Store, logger: Logger, observer?: StoreObserver): Store {
  const wrapped: Record<string, unknown> = {};
  for (const key of methodNames(store)) {
    const method = (store as unknown as Record<string, unknown>)[key];
    if (typeof method !== 'function') continue;
    const op = key;
    const isAsync = op !== 'watchChanges';
    wrapped[op] = (...args: unknown[]) => {
      const started = performance.now();
      const done = (error?: unknown) => {
        const ms = performance.now() - started;
        observer?.(op, ms, error);
        if (error) logger.debug({ op, ms, err: error }, 'store operation failed');
      };
      if (!isAsync) return method.apply(store, args);
      try {
        return (method.apply(store, args) as Promise<unknown>).then(
          (value) => {
            done();
            return value;
          },
          (error: unknown) => {
            done(error);
            throw error instanceof BatonError ? error : new StoreError(op, error);
          },
        );
      } catch (error) {
        done(error);
        return Promise.reject(error instanceof BatonError ? error : new StoreError(op, error));
      }
    };
  }
  return Object.assign(Object.create(null), { driver: store.driver, clock: store.clock, claimsInFlight: store.claimsInFlight }, wrapped) as Store;
}

function methodNames(store: Store): string[] {
  const names = new Set<string>();
  for (let proto = Object.getPrototypeOf(store); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) if (name !== 'constructor') names.add(name);
  }
  return [...names];
}

/**
 * Logs a long wait for SQLite's write lock: one warn line when it passes the report
 * threshold (the operation, how long so far), one info line when it ends (how long in
 * all, and how: the lock taken, or the wait's budget spent).
 */
export function logLockWait(logger: Logger, wait: LockWait): void {
  if (wait.phase === 'long') {
    logger.warn({ op: wait.op, waitedMs: wait.waitedMs }, `store operation ${wait.op} has waited ${wait.waitedMs} ms for the database's write lock: another process holds it`);
  } else {
    logger.info({ op: wait.op, waitedMs: wait.waitedMs, outcome: wait.outcome }, `store operation ${wait.op} waited ${wait.waitedMs} ms for the write lock; ${wait.outcome === 'acquired' ? 'it has it now' : wait.outcome === 'gave-up' ? 'gave up (its lock budget is spent)' : 'failed'}`);
  }
}
