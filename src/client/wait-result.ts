import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import * as z from 'zod';
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

/** `baton.close()` was called while the wait was in progress; the job goes on. */
export class WaitClosedError extends WaitError {
  constructor(id: number, job: Job | null) {
    super('closed', `the wait for job ${id} ended: baton.close() was called (the job goes on)`, job);
  }
}
brand(WaitClosedError, 'WaitClosedError');

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
  // SQLite's change watch does not see this connection's own commits (a worker of this
  // process finishing the job): local writes count. PostgreSQL's LISTEN connection hears
  // the pool's commits too, and names what finished: a local write tells it nothing more
  // (with a thousand waits and a worker in one process, every completion batch made every
  // wait read its job again).
  const offs = deps.store.driver === 'sqlite' ? [deps.onLocalWrite(waker.mark)] : [];
  const stop = new AbortController();
  const { waits } = hubOf(deps.store);
  waits.add(stop);
  const timer = timeout === undefined ? undefined : setTimeout(() => stop.abort('timeout'), timeout);
  const onAbort = () => stop.abort('signal');
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // Watching and registered before the first read: a finish after the read is heard.
    offs.push(await join(deps, (change) => (concerns(change, jobId) ? waker.mark() : undefined)));
    signal?.throwIfAborted();
    let job: Job | null = null;
    for (;;) {
      waker.clear();
      const readAt = performance.now();
      job = await deps.store.jobGet({ id: jobId }).catch((error: unknown) => {
        throw stop.signal.reason === 'closed' ? new WaitClosedError(jobId, job) : error;
      });
      if (!job) throw new NotFoundError(`no job with id ${jobId}`);
      if (job.state === 'completed') return job.result as R;
      if (job.state === 'failed') throw new JobFailedError(job);
      if (job.state === 'cancelled') throw new JobCancelledError(job);
      if (!stop.signal.aborted) await waker.wait(readAt, 0, WAIT_POLL_MS, stop.signal);
      if (stop.signal.aborted) {
        if (stop.signal.reason === 'timeout') throw new WaitTimeoutError(job, timeout!);
        if (stop.signal.reason === 'closed') throw new WaitClosedError(jobId, job);
        throw signal!.reason;
      }
    }
  } finally {
    waits.delete(stop);
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    stop.abort('done');
    for (const off of offs) off();
  }
}

/**
 * Whether `change` may concern the awaited job: anything may have changed (no details), or
 * jobs finished and `jobId` is among them (or the list is empty: unnamed). A cancel request
 * (the job still runs) or jobs made claimable finish nothing.
 */
function concerns(change: StoreChange | undefined, jobId: number): boolean {
  if (!change || (!change.finished && !change.cancel && !change.claimable)) return true;
  return change.finished !== undefined && (change.finished.length === 0 || change.finished.includes(jobId));
}

/**
 * How long a process keeps its change watch and its waiter registration after its last
 * wait ended, ms. A process that awaits results one after another (one per request)
 * then keeps one LISTEN connection (PostgreSQL) and one registration, instead of
 * opening the connection and writing and deleting the registration for every wait.
 * `baton.close()` releases them at once ({@link releaseWaits}).
 */
export const WAITER_LINGER_MS = 10_000;

/** What the waits of this process on one store share: one change watch and one finished_listeners registration. */
interface Hub {
  /** Each wait in progress, by its stop: releaseWaits (baton.close()) ends them. */
  waits: Set<AbortController>;
  listeners: Set<(change?: StoreChange) => void>;
  /** Stops the change watch; undefined when none is open. */
  off: (() => void) | undefined;
  /** Renews the registration every third of WAITER_TTL_MS; undefined when not registered. */
  renew: NodeJS.Timeout | undefined;
  /** The last registration or unregistration (each waits for the one before). */
  registered: Promise<unknown>;
  /** Releases the watch and the registration WAITER_LINGER_MS after the last wait left. */
  linger: NodeJS.Timeout | undefined;
}

const hubs = new WeakMap<Store, Hub>();

function hubOf(store: Store): Hub {
  let hub = hubs.get(store);
  if (!hub) hubs.set(store, (hub = { waits: new Set(), listeners: new Set(), off: undefined, renew: undefined, registered: Promise.resolve(), linger: undefined }));
  return hub;
}

/**
 * Joins `store`'s hub: subscribes `listener` to the shared change watch (one WAL watch
 * and poll on SQLite, one LISTEN connection on PostgreSQL, for a thousand waits) and
 * registers this process as a result waiter (renewed every third of WAITER_TTL_MS).
 * Resolves once registered, with the leave function; the last wait to leave starts the
 * linger. A registration that fails is left to the backstop poll.
 */
async function join(deps: ClientDeps, listener: (change?: StoreChange) => void): Promise<() => void> {
  const store = deps.store;
  const shared = hubOf(store);
  clearTimeout(shared.linger);
  shared.linger = undefined;
  const own = (change?: StoreChange) => listener(change); // one entry per wait, even for the same function
  shared.listeners.add(own);
  shared.off ??= store.watchChanges({ intervalMs: WAIT_POLL_MS, listener: (change) => shared.listeners.forEach((l) => l(change)) });
  if (!shared.renew) {
    const renew = () => store.finishedListen({ owner: WAITER, ttlMs: WAITER_TTL_MS, now: deps.clock.now() }).catch(() => undefined);
    shared.registered = shared.registered.then(renew); // after an unregistration still on its way
    shared.renew = setInterval(() => void renew(), WAITER_TTL_MS / 3);
    shared.renew.unref();
  }
  await shared.registered;
  return () => {
    if (!shared.listeners.delete(own) || shared.listeners.size > 0) return;
    shared.linger = setTimeout(() => void release(store, shared), WAITER_LINGER_MS);
    shared.linger.unref();
  };
}

/** Stops `hub`'s change watch and unregisters the process; resolves once unregistered. */
function release(store: Store, hub: Hub): Promise<unknown> {
  clearTimeout(hub.linger);
  hub.linger = undefined;
  hub.off?.();
  hub.off = undefined;
  if (hub.renew) {
    clearInterval(hub.renew);
    hub.renew = undefined;
    hub.registered = hub.registered.then(() => store.finishedUnlisten({ owner: WAITER }).catch(() => undefined));
  }
  return hub.registered;
}

/**
 * Releases at once what the waits of this process on `store` share (its change watch and
 * its waiter registration), lingering or not: `baton.close()` calls it before closing the
 * store. A wait still under way rejects at once with a WaitClosedError.
 */
export async function releaseWaits(store: Store): Promise<void> {
  const hub = hubs.get(store);
  for (const stop of hub?.waits ?? []) stop.abort('closed');
  if (hub) await release(store, hub);
}
