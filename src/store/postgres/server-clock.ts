import type { Clock } from '../../clock.js';
import type { ClockReading } from '../store.js';

/** Reads taken per measurement; the one with the shortest round trip is kept. */
const READS = 3;

/**
 * The database server's clock as seen from this host: `host.now()` plus the offset
 * measured by the latest {@link ServerClock.sync}. Why an offset rather than
 * `now()` inside each statement (River's `coalesce($now, now())`): much of what
 * depends on time is decided in this process — when a lease is about to run out,
 * when the next cron tick is due, a task's timeout, a service's next run — and
 * all of it must agree with the timestamps the database holds; one offset applied
 * to the clock every part already takes its `now` from keeps tests' injected
 * clocks working unchanged and costs no round trip per decision.
 */
export class ServerClock implements Clock {
  readonly #host: Clock;
  #offsetMs = 0;

  /** @param host - this host's clock (injectable so tests can simulate a skewed host) */
  constructor(host: Clock) {
    this.#host = host;
  }

  /** Database time in ms since the epoch (host time until the first sync). */
  now(): number {
    return this.#host.now() + this.#offsetMs;
  }

  /**
   * Takes {@link READS} reads of the server's clock with `readServerMs` (ms since
   * the epoch, sub-millisecond) and keeps the one with the shortest round trip; its
   * offset is the server's time minus the midpoint of that round trip on the host
   * clock, rounded to a whole ms.
   * @throws what `readServerMs` throws (the offset is then left as it was)
   */
  async sync(readServerMs: () => Promise<number>): Promise<ClockReading> {
    let best: ClockReading | undefined;
    for (let i = 0; i < READS; i++) {
      const sent = this.#host.now();
      const server = await readServerMs();
      const received = this.#host.now();
      const reading = { offsetMs: Math.round(server - (sent + received) / 2), roundTripMs: received - sent };
      if (!best || reading.roundTripMs < best.roundTripMs) best = reading;
    }
    this.#offsetMs = best!.offsetMs;
    return best!;
  }
}
