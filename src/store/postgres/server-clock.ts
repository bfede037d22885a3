import type { Clock } from '../../clock.js';
import type { ClockReading } from '../store.js';

/** Reads taken per measurement; the one with the shortest round trip is kept. */
const READS = 3;

/**
 * The database server's clock as seen from this host: the server's time read by the
 * latest {@link ServerClock.sync}, carried forward on the monotonic clock. Why that rather than
 * `now()` inside each statement (River's `coalesce($now, now())`): much of what
 * depends on time is decided in this process — when a lease is about to run out,
 * when the next cron tick is due, a task's timeout, a service's next run — and
 * all of it must agree with the timestamps the database holds; one offset applied
 * to the clock every part already takes its `now` from keeps tests' injected
 * clocks working unchanged and costs no round trip per decision.
 */
export class ServerClock implements Clock {
  readonly #host: Clock;
  /** The server's time at the latest sync (ms since the epoch) and `performance.now()` then; none before the first. */
  #anchor: { serverMs: number; monotonicMs: number } | undefined;

  /** @param host - this host's clock (injectable so tests can simulate a skewed host) */
  constructor(host: Clock) {
    this.#host = host;
  }

  /**
   * Database time in whole ms since the epoch: the server's time at the latest sync plus the
   * monotonic time elapsed since (host time until the first sync). Between syncs it never
   * reads the host's wall clock, so a step of that clock (NTP, a VM resumed, an operator)
   * cannot move it: before, a step forward of an hour put Baton's time an hour ahead until
   * the next sync, a minute later, and the scheduler ran a tick an hour early (issue 31).
   * The monotonic clock drifts from real time by parts per million: microseconds a minute.
   */
  now(): number {
    const anchor = this.#anchor;
    return anchor ? Math.floor(anchor.serverMs + (performance.now() - anchor.monotonicMs)) : this.#host.now();
  }

  /**
   * Takes {@link READS} reads of the server's clock with `readServerMs` (ms since
   * the epoch, sub-millisecond) and keeps the one with the shortest round trip (timed
   * on the monotonic clock): the server's time then anchors {@link now} at that round
   * trip's midpoint. Its reported offset is the server's time minus that midpoint on the
   * host's clock, rounded to a whole ms (what a skew warning quotes).
   * @throws what `readServerMs` throws (the offset is then left as it was)
   */
  async sync(readServerMs: () => Promise<number>): Promise<ClockReading> {
    let best: { reading: ClockReading; serverMs: number; monotonicMs: number } | undefined;
    for (let i = 0; i < READS; i++) {
      const host = this.#host.now();
      const sent = performance.now();
      const server = await readServerMs();
      const received = performance.now();
      const roundTripMs = received - sent;
      const reading = { offsetMs: Math.round(server - (host + roundTripMs / 2)), roundTripMs: Math.round(roundTripMs) };
      if (!best || roundTripMs < best.reading.roundTripMs) best = { reading, serverMs: server, monotonicMs: (sent + received) / 2 };
    }
    this.#anchor = { serverMs: best!.serverMs, monotonicMs: best!.monotonicMs };
    return best!.reading;
  }
}
