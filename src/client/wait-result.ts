import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { BatonError, brand, NotFoundError } from '../errors.js';
import type { Job, Json } from '../job/types.js';
import type { Store, StoreChange } from '../store/store.js';
import { parseInput } from '../validation.js';
import type { ClientDeps } from './deps.js';
import { Waker } from './follow.js';
import { knownJobId } from './query.js';

/** Options of `waitForResult`. */
export interface WaitOptions {
  /** Stops waiting: the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Gives up after this long, ms (1..2147483647): the call rejects with a WaitTimeoutError. @defaultValue none */
  timeout?: number;
}

/**
 * The backstop poll of an awaited result, ms: the job is read again at least this often,
 * whatever reported a change (a notification lost with its connection is then seen late,
 * never missed).
 */
export const WAIT_POLL_MS = 5000;

/** How long a process's registration as a result waiter lives (ms) unless renewed; renewed every third of it while it waits. */
export const WAITER_TTL_MS = 60_000;

/** A failure of `waitForResult`: the job ended other than completed, or the wait ended first. `job`: the job as last read. */
export class WaitError extends BatonError {
  readonly job: Job | null;
  constructor(code: string, message: string, job: Job | null) {
    super(code, message);
    this.job = job;
  }
}
brand(WaitError, 'WaitError');

/** The awaited job failed for good; `error` is its last error's message. */
export class JobFailedError extends WaitError {
  readonly error: string | null;
  constructor(job: Job) {
    const error = job.errors.at(-1)?.message ?? null;
    super('job_failed', `job ${job.id} (${job.task}) failed${error === null ? '' : `: ${error}`}`, job);
    this.error = error;
  }
}
brand(JobFailedError, 'JobFailedError');

/** The awaited job was cancelled; `reason` is the cancel's. */
export class JobCancelledError extends WaitError {
  readonly reason: string | null;
  constructor(job: Job) {
    super('job_cancelled', `job ${job.id} (${job.task}) was cancelled${job.cancelReason === null ? '' : `: ${job.cancelReason}`}`, job);
    this.reason = job.cancelReason;
  }
}
brand(JobCancelledError, 'JobCancelledError');

/** The wait's `timeout` passed before the job finished; the job goes on. */
export class WaitTimeoutError extends WaitError {
  readonly timeoutMs: number;
  constructor(job: Job | null, timeoutMs: number) {
    super('wait_timeout', `job ${job?.id ?? '?'} had not finished after ${timeoutMs} ms (it is ${job?.state ?? 'unknown'}; it goes on)`, job);
    this.timeoutMs = timeoutMs;
  }
}
brand(WaitTimeoutError, 'WaitTimeoutError');

const optionsSchema = z.strictObject({
  signal: z.instanceof(AbortSignal, { message: 'must be an AbortSignal' }).optional(),
  timeout: z.number().int().min(1).max(2_147_483_647).optional(),
});

/** This process's name as a result waiter (finished_listeners' owner). */
const WAITER = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

/**
 * Awaits a job's end from any process (issue 32): resolves with its result once it is
 * `completed`. It subscribes before it reads, so an end that lands between the two is not
 * missed: this process's own writes, the store's change watch (SQLite: the WAL watch, within
 * ms of the commit; PostgreSQL: a NOTIFY sent when jobs finish while a process waits,
 * migration 23), and a backstop read every {@link WAIT_POLL_MS}.
 * @returns the job's result (null when it returned nothing)
 * @throws JobFailedError (failed for good; a job that will retry is still waited for),
 *   JobCancelledError, WaitTimeoutError (after `timeout` ms), the signal's reason when it
 *   aborts, NotFoundError (no such job, or deleted while awaited), ValidationError (options), StoreError
 */
export async function waitForResult<R = Json>(deps: ClientDeps, id: number, options: WaitOptions = {}): Promise<R> {
  const jobId = knownJobId(id);
  const { signal, timeout } = parseInput(optionsSchema, options ?? {}, 'invalid waitForResult options', { subject: 'options' });
  signal?.throwIfAborted();
  const waker = new Waker();
  const offs = [
    deps.onLocalWrite(waker.mark),
    watchShared(deps.store, (change) => (!change?.finished || change.finished.length === 0 || change.finished.includes(jobId) ? waker.mark() : undefined)),
  ];
  const stop = new AbortController();
  const timer = timeout === undefined ? undefined : setTimeout(() => stop.abort('timeout'), timeout);
  const onAbort = () => stop.abort('signal');
  signal?.addEventListener('abort', onAbort, { once: true });
  let release: (() => Promise<void>) | undefined;
  try {
    release = await register(deps); // registered before the first read, as the watch is
    signal?.throwIfAborted();
    let job: Job | null = null;
    for (;;) {
      waker.clear();
      const readAt = performance.now();
      job = await deps.store.jobGet({ id: jobId });
      if (!job) throw new NotFoundError(`no job with id ${jobId}`);
      if (job.state === 'completed') return job.result as R;
      if (job.state === 'failed') throw new JobFailedError(job);
      if (job.state === 'cancelled') throw new JobCancelledError(job);
      if (!stop.signal.aborted) await waker.wait(readAt, 0, WAIT_POLL_MS, stop.signal);
      if (stop.signal.aborted) {
        if (stop.signal.reason === 'timeout') throw new WaitTimeoutError(job, timeout!);
        throw signal!.reason;
      }
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    stop.abort('done');
    for (const off of offs) off();
    await release?.();
  }
}

/** The change watch of each store, shared by every wait of this process on it: one WAL watch and poll (SQLite) for a thousand waits, not a thousand. */
const watches = new WeakMap<Store, { listeners: Set<(change?: StoreChange) => void>; off: (() => void) | undefined }>();

/** Subscribes `listener` to `store`'s shared change watch (started by the first, stopped with the last); returns unsubscribe. */
function watchShared(store: Store, listener: (change?: StoreChange) => void): () => void {
  let hub = watches.get(store);
  if (!hub) watches.set(store, (hub = { listeners: new Set(), off: undefined }));
  const shared = hub;
  const own = (change?: StoreChange) => listener(change); // one entry per wait, even for the same function
  shared.listeners.add(own);
  shared.off ??= store.watchChanges({ intervalMs: WAIT_POLL_MS, listener: (change) => shared.listeners.forEach((l) => l(change)) });
  return () => {
    if (!shared.listeners.delete(own) || shared.listeners.size > 0) return;
    shared.off?.();
    shared.off = undefined;
  };
}

/** Waiters of this process on each store: one finished_listeners registration per process, held while any waits. */
const waiting = new WeakMap<Store, { count: number; renew: NodeJS.Timeout | undefined; registered: Promise<unknown> }>();

/**
 * Registers this process as a result waiter (shared by every wait of the process on that
 * store, renewed every third of WAITER_TTL_MS); resolves once registered, with the release
 * (the last wait to release unregisters). A registration that fails is left to the backstop poll.
 */
async function register(deps: ClientDeps): Promise<() => Promise<void>> {
  const store = deps.store;
  let entry = waiting.get(store);
  const renew = () => store.finishedListen({ owner: WAITER, ttlMs: WAITER_TTL_MS, now: deps.clock.now() }).catch(() => undefined);
  if (!entry) {
    entry = { count: 0, renew: undefined, registered: Promise.resolve() };
    waiting.set(store, entry);
  }
  const shared = entry;
  if (shared.count++ === 0) {
    shared.registered = shared.registered.then(renew); // after an unregistration still on its way
    shared.renew = setInterval(() => void renew(), WAITER_TTL_MS / 3);
    shared.renew.unref();
  }
  await shared.registered;
  return async () => {
    if (--shared.count > 0) return;
    clearInterval(shared.renew);
    shared.renew = undefined;
    shared.registered = store.finishedUnlisten({ owner: WAITER }).catch(() => undefined);
    await shared.registered;
  };
}
