/**
 * Wall-clock time in ms with sub-millisecond resolution, comparable between
 * processes on one host (`performance.timeOrigin` is the process start on the
 * epoch scale). Benchmarks that measure across processes put this in payloads
 * and reports.
 */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Resolves after `ms` (a real timer, kept referenced so a fixture stays alive). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A small seeded PRNG (mulberry32): the same seed gives the same run-to-run schedule. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Calls `fn(i)` for i = 0..count-1 as Poisson arrivals at a mean of `perSecond`
 * (exponential gaps from a seeded PRNG), each scheduled against the start time so
 * slow calls cause no drift. Random gaps keep the arrivals from locking in phase
 * with a worker's fixed-period polling (a steady 50/s is exactly the 20 ms watch
 * interval). Calls are not awaited one by one; resolves when all settled.
 */
export async function paced(count: number, perSecond: number, fn: (i: number) => Promise<unknown>, seed = 1): Promise<void> {
  const random = seededRandom(seed);
  const meanGap = 1000 / perSecond;
  const start = performance.now();
  const calls: Array<Promise<unknown>> = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const wait = start + at - performance.now();
    if (wait > 0) await pause(wait);
    calls.push(fn(i));
    at += -Math.log(1 - random()) * meanGap;
  }
  await Promise.all(calls);
}
