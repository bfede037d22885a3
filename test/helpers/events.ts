/** Anything with `on(event, listener) → off`. */
interface Subscribable<Events> {
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): () => void;
}

/**
 * Resolves with the first `event` payload that passes `filter`; rejects after
 * `timeoutMs` (a safety net against hangs, not a timing assertion).
 */
export function waitForEvent<Events, K extends keyof Events>(
  source: Subscribable<Events>,
  event: K,
  filter: (payload: Events[K]) => boolean = () => true,
  timeoutMs = 20_000,
): Promise<Events[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${String(event)}`));
    }, timeoutMs);
    const off = source.on(event, (payload) => {
      if (!filter(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

/** Resolves once `count` matching events have fired; returns their payloads. */
export function collectEvents<Events, K extends keyof Events>(
  source: Subscribable<Events>,
  event: K,
  count: number,
  filter: (payload: Events[K]) => boolean = () => true,
  timeoutMs = 30_000,
): Promise<Events[K][]> {
  const seen: Events[K][] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out after ${timeoutMs} ms: saw ${seen.length} of ${count} ${String(event)} events`));
    }, timeoutMs);
    const off = source.on(event, (payload) => {
      if (!filter(payload)) return;
      seen.push(payload);
      if (seen.length === count) {
        clearTimeout(timer);
        off();
        resolve(seen);
      }
    });
  });
}

/** Polls `check` on each event-loop turn until it returns a truthy value (for state owned by another process). */
export async function until<T>(check: () => Promise<T> | T, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
