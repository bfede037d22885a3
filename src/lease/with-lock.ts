import { sleep } from '../clock.js';
import { ConfigError, LockBusyError } from '../errors.js';
import { stringProblems } from '../job/payload.js';
import { acquireLease, type LeaseDeps } from './lease.js';

/** Options of `baton.withLock`. Durations are ms. */
export interface LockOptions {
  /** Lease length; renewed every ttl/3 while fn runs. 100..2147483647. */
  ttl: number;
  /**
   * When the lock is held: false (default) throws LockBusyError at once; an object
   * polls until the lock is free, up to `timeout` ms (then LockBusyError), or until
   * `signal` aborts (then its reason).
   * @defaultValue false
   */
  wait?: false | { timeout: number; signal?: AbortSignal; /** @defaultValue min(250, ttl / 4) */ pollInterval?: number };
}

/** What fn receives. */
export interface LockContext {
  /** Aborts with LeaseLostError when the lock is lost (or with the caller's wait.signal reason). */
  signal: AbortSignal;
  /** Grows with every acquisition of this lock name: pass it to the resource you protect. */
  fencingToken: number;
}

/**
 * Runs `fn` while holding the named lock (a lease, see lease.ts), in any process
 * sharing the database. The lease is renewed every ttl/3 while fn runs and released
 * when fn returns or throws (fenced: never freeing a newer holder's lease).
 *
 * - Busy and no `wait`: throws LockBusyError naming the holder and until when.
 * - Lost while fn runs (renewal refused, or not renewed before the expiry by this
 *   process's clock, e.g. a blocked event loop): fn's signal aborts with
 *   LeaseLostError, and withLock rejects with that error once fn settles, whatever
 *   fn returned — its work was not protected by the lock to the end.
 *
 * @returns what fn resolves with
 * @throws LockBusyError; LeaseLostError; fn's own error; ConfigError for bad options; StoreError
 */
export async function withLock<T>(deps: LeaseDeps & { owner: string }, name: string, options: LockOptions, fn: (lock: LockContext) => Promise<T>): Promise<T> {
  if (typeof name !== 'string' || name.length === 0 || name.length > 500) throw new ConfigError('withLock: name must be a string of 1..500 characters');
  const problems = stringProblems(name, 'withLock name');
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
  const ttl = options?.ttl;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 100 || ttl > 2_147_483_647) {
    throw new ConfigError(`withLock option ttl: must be an integer number of ms, 100..2147483647 (got ${String(ttl)})`);
  }
  const wait = options.wait ?? false;
  if (wait !== false && (typeof wait.timeout !== 'number' || !(wait.timeout >= 0))) {
    throw new ConfigError('withLock option wait.timeout: must be a number of ms >= 0');
  }
  // The caller awaits the lock: keep the process alive while it waits and holds it
  // (the poll sleeps and renewal timers are unref'd and would not).
  const keepAlive = setInterval(() => undefined, 2_147_483_647);
  try {
    return await lockAndRun(deps, name, ttl, wait, fn);
  } finally {
    clearInterval(keepAlive);
  }
}

async function lockAndRun<T>(
  deps: LeaseDeps & { owner: string },
  name: string,
  ttl: number,
  wait: Exclude<LockOptions['wait'], undefined>,
  fn: (lock: LockContext) => Promise<T>,
): Promise<T> {
  const started = deps.clock.now();
  const poll = wait === false ? 0 : (wait.pollInterval ?? Math.max(10, Math.min(250, Math.floor(ttl / 4))));
  let lease;
  for (;;) {
    if (wait !== false && wait.signal?.aborted) throw wait.signal.reason;
    const result = await acquireLease(deps, { name, owner: deps.owner, ttl });
    if (result.acquired) {
      lease = result;
      break;
    }
    const waited = deps.clock.now() - started;
    if (wait === false) throw new LockBusyError(name, result.owner, new Date(result.expiresAt));
    if (waited >= wait.timeout) throw new LockBusyError(name, result.owner, new Date(result.expiresAt), waited);
    await sleep(Math.min(poll, Math.max(1, wait.timeout - waited)), wait.signal);
  }
  const callerSignal = wait === false ? undefined : wait.signal;
  const onCallerAbort = () => lease.abort(callerSignal!.reason as Error);
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  try {
    const value = await fn({ signal: lease.signal, fencingToken: lease.token });
    if (lease.lost) throw lease.signal.reason;
    return value;
  } finally {
    callerSignal?.removeEventListener('abort', onCallerAbort);
    await lease.release();
  }
}
