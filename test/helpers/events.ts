import type { Baton, ClientEvents, Worker, WorkerEvents } from 'baton-jobs';

/** What the implementations accept (the overloads give the types). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnySubscribable = { on(event: any, listener: (payload: any) => void): () => void };

/** Anything with `on(event, listener) → off`. */
interface Subscribable<Events> {
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): () => void;
}

// The Worker and Baton overloads name their event maps: TypeScript 7 cannot infer
// `Events` from a class's generic `on<K extends keyof WorkerEvents>` method.
/**
 * Resolves with the first `event` payload that passes `filter`; rejects after
 * `timeoutMs` (a safety net against hangs, not a timing assertion).
 */
export function waitForEvent<K extends keyof WorkerEvents>(
  source: Worker,
  event: K,
  filter?: (payload: WorkerEvents[K]) => boolean,
  timeoutMs?: number,
): Promise<WorkerEvents[K]>;
export function waitForEvent<K extends keyof ClientEvents>(
  source: Baton,
  event: K,
  filter?: (payload: ClientEvents[K]) => boolean,
  timeoutMs?: number,
): Promise<ClientEvents[K]>;
export function waitForEvent<Events, K extends keyof Events>(
  source: Subscribable<Events>,
  event: K,
  filter?: (payload: Events[K]) => boolean,
  timeoutMs?: number,
): Promise<Events[K]>;
export function waitForEvent<Events, K extends keyof Events>(
  source: AnySubscribable,
  event: K,
  filter: (payload: Events[K]) => boolean = () => true,
  timeoutMs = 60_000,
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
export function collectEvents<K extends keyof WorkerEvents>(
  source: Worker,
  event: K,
  count: number,
  filter?: (payload: WorkerEvents[K]) => boolean,
  timeoutMs?: number,
): Promise<WorkerEvents[K][]>;
export function collectEvents<K extends keyof ClientEvents>(
  source: Baton,
  event: K,
  count: number,
  filter?: (payload: ClientEvents[K]) => boolean,
  timeoutMs?: number,
): Promise<ClientEvents[K][]>;
export function collectEvents<Events, K extends keyof Events>(
  source: Subscribable<Events>,
  event: K,
  count: number,
  filter?: (payload: Events[K]) => boolean,
  timeoutMs?: number,
): Promise<Events[K][]>;
export function collectEvents<Events, K extends keyof Events>(
  source: AnySubscribable,
  event: K,
  count: number,
  filter: (payload: Events[K]) => boolean = () => true,
  timeoutMs = 60_000,
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
export async function until<T>(check: () => Promise<T> | T, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
