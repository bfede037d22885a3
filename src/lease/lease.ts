/**
 * Named leases: the primitive under locks (`withLock`) and services. A lease has an
 * owner, an expiry, and a fencing token that grows by one on every acquire of that
 * name and never decreases, so a resource that remembers the highest token it saw
 * can refuse a late write from an earlier holder.
 *
 * ```
 * acquire ──► held ──renew every ttl/3──► held ──release()──► freed (token kept)
 *               │
 *               └─ renewal refused (someone newer holds it), or our own clock passed
 *                  the expiry without a renewal (event loop blocked, database down)
 *                  ──► lost: `signal` aborts with LeaseLostError; release() is a no-op
 * ```
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { LeaseLostError } from '../errors.js';
import type { Store } from '../store/store.js';

/** What holding a lease needs. */
export interface LeaseDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
}

/** The answer when a lease is held by someone else. */
export interface LeaseBusy {
  acquired: false;
  owner: string;
  /** ms since the epoch */
  expiresAt: number;
}

/**
 * Tries once to take lease `name` for `owner` for `ttl` ms. On success the returned
 * {@link HeldLease} is already renewing itself.
 * @throws StoreError when the database cannot be reached
 */
export async function acquireLease(deps: LeaseDeps, params: { name: string; owner: string; ttl: number }): Promise<HeldLease | LeaseBusy> {
  const result = await deps.store.leaseAcquire({ name: params.name, owner: params.owner, ttlMs: params.ttl, now: deps.clock.now() });
  if (!result.acquired) return result;
  return new HeldLease(deps, { ...params, token: result.token, expiresAt: result.expiresAt });
}

/** A lease this process holds: renews itself until released or lost. */
export class HeldLease {
  readonly acquired = true;
  readonly name: string;
  readonly owner: string;
  /** The fencing token of this hold. */
  readonly token: number;
  readonly ttl: number;
  readonly #deps: LeaseDeps;
  readonly #controller = new AbortController();
  #expiresAt: number;
  #timer: NodeJS.Timeout | undefined;
  #renewing: Promise<void> | undefined;
  #done = false;
  #lost = false;

  constructor(deps: LeaseDeps, params: { name: string; owner: string; ttl: number; token: number; expiresAt: number }) {
    this.#deps = deps;
    this.name = params.name;
    this.owner = params.owner;
    this.ttl = params.ttl;
    this.token = params.token;
    this.#expiresAt = params.expiresAt;
    this.#schedule();
  }

  /** Aborts when the lease is lost (reason LeaseLostError) or when {@link abort} is called. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** When the lease runs out unless renewed, ms since the epoch (as last stored). */
  get expiresAt(): number {
    return this.#expiresAt;
  }

  /** True once the lease was lost. */
  get lost(): boolean {
    return this.#lost;
  }

  /** Aborts `signal` with `reason` (e.g. ShutdownError); the lease is still held until release(). */
  abort(reason: Error): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  /** Renews now (tests and callers that cannot wait for the timer). @returns false when the lease is lost */
  async renew(): Promise<boolean> {
    if (this.#done || this.lost) return false;
    const now = this.#deps.clock.now();
    if (now >= this.#expiresAt) {
      this.#lose(`lease "${this.name}" expired by this process's clock before it was renewed (event loop blocked or database unreachable)`);
      return false;
    }
    try {
      const renewed = await this.#deps.store.leaseRenew({ name: this.name, owner: this.owner, token: this.token, ttlMs: this.ttl, now });
      if (!renewed) {
        this.#lose(`lease "${this.name}" was taken over by another owner (token ${this.token} is stale)`);
        return false;
      }
      this.#expiresAt = now + this.ttl;
      return true;
    } catch (error) {
      this.#deps.logger.warn({ err: error, lease: this.name }, 'lease renewal failed; retrying until the lease would expire');
      if (this.#deps.clock.now() >= this.#expiresAt) this.#lose(`lease "${this.name}" expired while the database could not be reached`);
      return !this.lost;
    }
  }

  /**
   * Stops renewing and frees the lease, fenced by the token: a lease taken over by a
   * newer holder is never freed. Never rejects (a failed release lets the lease expire).
   * @returns true when this call freed it
   */
  async release(): Promise<boolean> {
    if (this.#done) return false;
    this.#done = true;
    clearTimeout(this.#timer);
    await this.#renewing;
    try {
      return await this.#deps.store.leaseRelease({ name: this.name, owner: this.owner, token: this.token });
    } catch (error) {
      this.#deps.logger.warn({ err: error, lease: this.name }, 'lease release failed; it will expire on its own');
      return false;
    }
  }

  #lose(message: string): void {
    this.#done = true;
    this.#lost = true;
    clearTimeout(this.#timer);
    this.#deps.logger.warn({ lease: this.name, token: this.token }, message);
    if (!this.#controller.signal.aborted) this.#controller.abort(new LeaseLostError(message));
  }

  #schedule(): void {
    if (this.#done) return;
    this.#timer = setTimeout(() => {
      this.#renewing = this.renew().then(() => {
        this.#renewing = undefined;
        this.#schedule();
      });
    }, Math.max(1, Math.floor(this.ttl / 3)));
    this.#timer.unref();
  }
}
