import { afterEach, expect } from 'vitest';
import type { ClaimedJob, Job } from '../../src/job/types.js';
import type { NewJob, Store } from '../../src/store/store.js';

/**
 * What a driver gives the conformance suite: fresh databases and a way to open a
 * store on one. The suite migrates every store it opens and closes it after the
 * test; the factory removes the database itself (e.g. in an `afterEach` of its own,
 * which runs after the suite's).
 */
export interface StoreFactory {
  /** A new, empty database for one test; returns its handle (a URL). */
  database(): string;
  /** Opens the driver on `database`, not yet migrated; each call is a new connection. */
  open(database: string): Store | Promise<Store>;
}

/** One test's database: `store` is migrated; `another()` opens one more instance on the same database. */
export interface Fixture {
  store: Store;
  another(): Promise<Store>;
}

/** What each part of the suite receives. */
export interface Harness {
  /** The driver name the suite runs for (what `store.driver` says). */
  name: string;
  /** A migrated store on a fresh database (closed after the test). */
  setup(): Promise<Fixture>;
  /** A fresh database without any store yet: `open()` opens one, not migrated (closed after the test). */
  fresh(): { open(): Promise<Store> };
}

/** The time every test starts at (2030-01-01T00:00:00Z, a minute boundary). Tests only ever inject `now`. */
export const T0 = Date.UTC(2030, 0, 1);

/** Registers the per-test bookkeeping; call inside the suite's `describe`. */
export function harness(name: string, factory: StoreFactory): Harness {
  const opened: Store[] = [];
  afterEach(async () => {
    // A test may have closed a store already (close() is under test): ignore that.
    await Promise.allSettled(opened.splice(0).map((store) => store.close()));
  });
  const openRaw = async (database: string) => {
    const store = await factory.open(database);
    opened.push(store);
    return store;
  };
  const openOn = async (database: string) => {
    const store = await openRaw(database);
    await store.migrate();
    return store;
  };
  return {
    name,
    fresh() {
      const database = factory.database();
      return { open: () => openRaw(database) };
    },
    async setup() {
      const database = factory.database();
      const store = await openOn(database);
      return { store, another: () => openOn(database) };
    },
  };
}

/** A job to insert: task `t` in queue `default`, due at T0, 3 attempts, no key. */
export function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', task: 't', payload: '{}', priority: 0, runAt: T0, maxAttempts: 3, timeoutMs: null, key: null, ...overrides };
}

/** Inserts one job (created) at `now`. */
export async function insert(store: Store, overrides: Partial<NewJob> = {}, now = T0): Promise<Job> {
  const [inserted] = await store.jobInsertMany({ jobs: [newJob(overrides)], now });
  expect(inserted!.created).toBe(true);
  return inserted!.job;
}

export interface ClaimOptions {
  workerId?: string;
  tasks?: string[];
  queues?: string[];
  limit?: number;
  leaseMs?: number;
  now?: number;
}

/** `jobClaim` with defaults: worker `w1`, task `t`, queue `default`, 10 slots, a 30 s lease, at T0. */
export function claim(store: Store, options: ClaimOptions = {}): Promise<ClaimedJob[]> {
  return store.jobClaim({
    workerId: options.workerId ?? 'w1',
    tasks: options.tasks ?? ['t'],
    queues: options.queues ?? ['default'],
    limit: options.limit ?? 10,
    leaseMs: options.leaseMs ?? 30_000,
    now: options.now ?? T0,
  });
}

/** Claims exactly one job (fails the test otherwise). */
export async function claimOne(store: Store, options: ClaimOptions = {}): Promise<ClaimedJob> {
  const claimed = await claim(store, { limit: 1, ...options });
  expect(claimed).toHaveLength(1);
  return claimed[0]!;
}

/** Inserts a job and claims it (worker `w1` unless told): the running job with its lease token. */
export async function running(store: Store, overrides: Partial<NewJob> = {}, options: ClaimOptions = {}): Promise<ClaimedJob> {
  const job = await insert(store, overrides, options.now ?? T0);
  const claimed = await claimOne(store, { tasks: [job.task], queues: [job.queue], ...options });
  expect(claimed.id).toBe(job.id);
  return claimed;
}

/**
 * A takeover: worker `a` claims a job with a 1 s lease at T0 and stops
 * heartbeating; the rescuer requeues it at T0 + 2 s and worker `b` claims it again.
 * `stale` is a's token, `fresh` b's.
 */
export async function takeover(store: Store): Promise<{ id: number; stale: number; fresh: number; at: number; before: ClaimedJob }> {
  const first = await running(store, { maxAttempts: 5 }, { workerId: 'a', leaseMs: 1000 });
  const at = T0 + 2000;
  expect(await store.jobRescueExpired({ now: at })).toEqual({ requeued: [first.id], failed: [], cancelled: [] });
  const second = await claimOne(store, { workerId: 'b', leaseMs: 30_000, now: at });
  expect(second.id).toBe(first.id);
  expect(second.leaseToken).not.toBe(first.leaseToken);
  return { id: first.id, stale: first.leaseToken, fresh: second.leaseToken, at, before: second };
}

/** Reads a job that must exist. */
export async function get(store: Store, id: number): Promise<Job> {
  const job = await store.jobGet({ id });
  expect(job, `job ${id}`).not.toBeNull();
  return job!;
}

/** Milliseconds of a Date, or null. */
export const ms = (date: Date | null): number | null => (date === null ? null : date.getTime());

/** The job without the fields a fenced write may change legitimately: for "nothing changed" comparisons. */
export function withoutLeaseToken<J extends Job>(job: J): Job {
  const { leaseToken: _, ...rest } = job as J & { leaseToken?: number };
  return rest as Job;
}
