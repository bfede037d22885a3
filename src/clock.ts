/**
 * Time source. Every time-dependent decision takes `now` from a Clock so tests can
 * control time without sleeping (River's approach). Values are milliseconds since
 * the Unix epoch.
 */
export interface Clock {
  now(): number;
}

/** The wall clock: `Date.now()`. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Resolves after `ms` milliseconds, or rejects with `signal.reason` (e.g. a
 * CancelledError) as soon as the signal aborts; unlike `timers/promises`, whose
 * rejection is a generic AbortError. Like any timer it keeps the process alive while
 * it waits (the CLI worker still exits after a stop when an abandoned handler waits).
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
