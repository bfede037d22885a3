/**
 * Scheduled services: code that runs on whichever instance holds its lease, the
 * classic "lock on a stored record with LastExecution/NextExecution" pattern.
 *
 * One {@link ServiceRunner} per service per worker:
 * ```
 *        ┌───────────── sleep: until next run (≤ maxWait), pollInterval after losing the lease ◄──┐
 *        ▼                                                                                         │
 *  read row ── paused / not due ──────────────────────────────────────────────────────────────────►┤
 *        │ due (never run, or next run passed)                                                     │
 *        ▼                                                                                         │
 *  acquire lease service:<name> ── busy ──────────────────────────────────────────────────────────►┤
 *        │ won: re-read the row (another instance may have just run it); still due?               │
 *        ▼                                                                                         │
 *  run({ lastRunAt, signal, fencingToken }), renewing the lease every ttl/3                        │
 *        ├─ returns next (Date | null) → serviceRecord, fenced by the lease token ────────────────►┤
 *        ├─ throws → logged, stored as last error, next = now + backoff(failures) ────────────────►┤
 *        └─ signal aborted (LeaseLostError, ShutdownError) → outcome NOT stored ──────────────────►┘
 *  then the lease is released at once.
 * ```
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { BatonError, ConfigError, ShutdownError, describeError } from '../errors.js';
import { DEFINITION_NAME, parseConfig } from '../validation.js';
import { DEFAULT_BACKOFF, backoffDelay, backoffSchema, type Backoff } from '../job/backoff.js';
import type { EventSink } from '../observe/events.js';
import type { Tracing } from '../observe/tracing.js';
import type { ServiceRecord, Store } from '../store/store.js';
import * as z from 'zod';
import { acquireLease, type HeldLease } from './lease.js';

const SERVICE_BRAND = Symbol.for('baton.service');

/** What a service's `run` receives. */
export interface ServiceContext {
  /** Start time of the last successful run; null when it never ran. */
  lastRunAt: Date | null;
  /** Aborts with LeaseLostError (another instance took over) or ShutdownError. */
  signal: AbortSignal;
  /** The lease's fencing token; grows with every acquisition. */
  fencingToken: number;
}

/** Options of `defineService`. Durations are ms. */
export interface ServiceOptions {
  /** One run. Resolves with the next run time, or null for "not again until triggered". */
  run: (ctx: ServiceContext) => Promise<Date | null>;
  /** Lease length, renewed every ttl/3 while running. @defaultValue 30000 */
  leaseTtl?: number;
  /** How soon an instance that lost the lease race looks again. @defaultValue 5000 */
  pollInterval?: number;
  /** Longest sleep while not due, so triggers and pauses made elsewhere are noticed. @defaultValue 300000 */
  maxWait?: number;
  /** Retry delay after a throw. @defaultValue {@link DEFAULT_BACKOFF} */
  backoff?: Backoff;
}

/** A service made by {@link defineService}; run it with `baton.worker({ services: [...] })`. */
export interface Service {
  readonly [SERVICE_BRAND]: true;
  readonly name: string;
  readonly run: ServiceOptions['run'];
  readonly leaseTtl: number;
  readonly pollInterval: number;
  readonly maxWait: number;
  readonly backoff: Backoff;
}

const ms = (min: number) => z.number().int('must be an integer (ms)').min(min, `must be at least ${min} ms`).max(2_147_483_647);
const optionsSchema = z
  .object({
    run: z.custom<ServiceOptions['run']>((v) => typeof v === 'function', 'must be a function'),
    leaseTtl: ms(100).optional(),
    pollInterval: ms(10).optional(),
    maxWait: ms(10).optional(),
    backoff: backoffSchema.optional(),
  })
  .strict();

/**
 * Defines a service.
 * @throws ConfigError naming a bad name or option
 */
export function defineService(name: string, options: ServiceOptions): Service {
  if (typeof name !== 'string' || !DEFINITION_NAME.test(name)) {
    throw new ConfigError(`service name ${JSON.stringify(name)} is invalid: 1-200 letters, digits and _ . : - /`);
  }
  parseConfig(optionsSchema, options, `service "${name}" option`);
  return {
    [SERVICE_BRAND]: true,
    name,
    run: options.run,
    leaseTtl: options.leaseTtl ?? 30_000,
    pollInterval: options.pollInterval ?? 5000,
    maxWait: options.maxWait ?? 300_000,
    backoff: options.backoff ?? DEFAULT_BACKOFF,
  };
}

/** True for values made by {@link defineService}. */
export function isService(value: unknown): value is Service {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[SERVICE_BRAND] === true;
}

/** The lease name of a service. */
export const serviceLeaseName = (name: string) => `service:${name}`;

/**
 * Due when never run (no run, no failure) with no next time, or when its next run
 * time has passed; never while paused. A null next time after a run means "not
 * again until triggered".
 */
export function isServiceDue(row: ServiceRecord, now: number): boolean {
  if (row.paused) return false;
  if (row.nextRunAt !== null) return row.nextRunAt <= now;
  return row.lastRunAt === null && row.lastErrorAt === null;
}

/** What a service runner reports; the worker hosting it emits these among its own (WorkerEvents). */
export interface ServiceEvents {
  /** This worker holds the service's lease and starts a run. */
  'service:started': { service: string; fencingToken: number; lastRunAt: Date | null };
  /** A run returned; its outcome is stored. `nextRunAt` null: not again until triggered. */
  'service:completed': { service: string; fencingToken: number; nextRunAt: Date | null; durationMs: number };
  /** A run threw; stored as the last error, retried at `retryAt`. */
  'service:failed': { service: string; fencingToken: number; error: unknown; message: string; retryAt: Date };
  /** A run's signal fired (LeaseLostError, ShutdownError): its outcome is not stored. */
  'service:aborted': { service: string; fencingToken: number; reason: Error };
}

/** What a runner needs from its worker. */
export interface ServiceRunnerDeps {
  store: Store;
  clock: Clock;
  /** Bound to the service's name (`service`) by the worker; the runner's lines add no second `service` key. */
  logger: Logger;
  events: EventSink<ServiceEvents>;
  /** Lease owner: the worker id. */
  owner: string;
  /** A `service <name>` span around each run. */
  tracing: Tracing;
  /** Called with every failed pass (the loop goes on after pollInterval). */
  onError(error: unknown): void;
}

/** Runs one service in one worker; see the module diagram. Tests call `runOnce()`. */
export class ServiceRunner {
  readonly service: Service;
  readonly #deps: ServiceRunnerDeps;
  #stopped = true;
  /** Set by stop(): no new run starts. */
  #stopping = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #current: { lease: HeldLease; settled: Promise<unknown> } | undefined;

  constructor(service: Service, deps: ServiceRunnerDeps) {
    this.service = service;
    this.#deps = deps;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#loop = this.#run();
  }

  /** Ends a sleep at once (a trigger or resume made in this process). */
  wake(): void {
    this.#wake?.();
  }

  /**
   * Stops the loop. A running run's signal aborts with ShutdownError; it gets up to
   * `grace` ms to settle, then its lease is released at once either way (so another
   * instance can take over) and its outcome is never stored.
   */
  async stop(grace: number): Promise<void> {
    this.#stopped = true;
    this.#stopping = true;
    this.#wake?.();
    const current = this.#current;
    if (current) {
      current.lease.abort(new ShutdownError());
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([current.settled, new Promise((resolve) => (timer = setTimeout(resolve, grace)))]);
      clearTimeout(timer);
      await current.lease.release();
    }
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      let wait: number;
      try {
        wait = await this.runOnce();
      } catch (error) {
        this.#deps.onError(error);
        wait = this.service.pollInterval;
      }
      if (this.#stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        timer.unref();
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#wake = done;
      });
      this.#wake = undefined;
    }
  }

  /**
   * One pass: runs the service when it is due and this worker wins the lease.
   * @returns how long to sleep before the next pass, in ms
   */
  async runOnce(): Promise<number> {
    const { store, clock } = this.#deps;
    const s = this.service;
    const row = await store.serviceEnsure({ name: s.name, now: clock.now() });
    if (!isServiceDue(row, clock.now())) return this.#sleepFor(row);
    if (this.#stopping) return 0;
    const lease = await acquireLease(this.#deps, { name: serviceLeaseName(s.name), owner: this.#deps.owner, ttl: s.leaseTtl });
    if (!lease.acquired) return s.pollInterval;
    try {
      // Another instance may have run it between our read and our acquire.
      const fresh = await store.serviceGet({ name: s.name });
      if (!fresh || !isServiceDue(fresh, clock.now()) || this.#stopping) return fresh ? this.#sleepFor(fresh) : 0;
      return await this.#execute(lease, fresh);
    } finally {
      await lease.release();
    }
  }

  async #execute(lease: HeldLease, row: ServiceRecord): Promise<number> {
    const { store, clock, events, logger } = this.#deps;
    const s = this.service;
    const startedAt = clock.now();
    const base = { service: s.name, fencingToken: lease.token };
    events.emit('service:started', { ...base, lastRunAt: row.lastRunAt === null ? null : new Date(row.lastRunAt) });
    const span = this.#deps.tracing.service(s.name, lease.token);
    const settled = span.within(async () => s.run({ lastRunAt: row.lastRunAt === null ? null : new Date(row.lastRunAt), signal: lease.signal, fencingToken: lease.token })).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    this.#current = { lease, settled };
    const outcome = await settled;
    this.#current = undefined;
    if (lease.signal.aborted) {
      const reason = lease.signal.reason as Error;
      span.event('baton.aborted', { 'baton.abort.reason': reason instanceof BatonError ? reason.code : String(reason) });
      span.end();
      // A stop is routine: the lease is released at once and another instance runs the service.
      if (reason instanceof ShutdownError) logger.info('service run stopped by the worker\'s shutdown; its lease is released for another instance');
      else logger.warn({ reason: reason?.message }, 'service run aborted; its outcome is not stored');
      events.emit('service:aborted', { ...base, reason });
      return lease.lost ? s.pollInterval : 0;
    }
    const now = clock.now();
    let next: number | null;
    let error: string | null = null;
    if (outcome.ok && (outcome.value === null || (outcome.value instanceof Date && !Number.isNaN(outcome.value.getTime())))) {
      next = outcome.value === null ? null : outcome.value.getTime();
    } else {
      const thrown = outcome.ok ? new TypeError(`service "${s.name}" run must resolve with a Date or null, got ${describeError(outcome.value)}`) : outcome.error;
      error = describeError(thrown);
      span.fail(thrown);
      next = now + backoffDelay(s.backoff, row.failures + 1);
      logger.error({ err: thrown, retryAt: new Date(next) }, 'service run failed; it will be retried');
    }
    span.end();
    const stored = await store.serviceRecord({ name: s.name, leaseName: lease.name, token: lease.token, lastRunAt: startedAt, nextRunAt: next, error, now });
    if (!stored) {
      logger.warn('service lease lost before its outcome was stored; outcome dropped');
      events.emit('service:aborted', { ...base, reason: lease.signal.reason instanceof Error ? lease.signal.reason : new Error('lease lost before the outcome was stored') });
      return s.pollInterval;
    }
    if (error === null) events.emit('service:completed', { ...base, nextRunAt: next === null ? null : new Date(next), durationMs: now - startedAt });
    else events.emit('service:failed', { ...base, error: outcome.ok ? error : outcome.error, message: error, retryAt: new Date(next!) });
    return this.#sleepFor({ ...row, nextRunAt: next, paused: false }, now);
  }

  #sleepFor(row: Pick<ServiceRecord, 'nextRunAt' | 'paused'>, now = this.#deps.clock.now()): number {
    if (row.paused || row.nextRunAt === null) return this.service.maxWait;
    return Math.min(this.service.maxWait, Math.max(0, row.nextRunAt - now));
  }
}
