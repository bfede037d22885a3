import type { Logger } from 'pino';

/**
 * Typed events. Each part owns its event map next to its code: the worker's
 * (`WorkerEvents`, src/worker/events.ts) merges those of the scheduler
 * (`SchedulerEvents`) and the service runner (`ServiceEvents`); the client's are
 * `ClientEvents` (src/client/events.ts). This module knows none of them: it only
 * carries them (graphile-worker's typed `noun:verb` map with a safe emit).
 */

/**
 * The emitting half of a {@link TypedEmitter}: what a part that only reports
 * events takes, typed with its own map (a `TypedEmitter` of a wider map fits).
 */
export interface EventSink<Events extends object> {
  emit<K extends keyof Events>(event: K, payload: Events[K]): void;
}

type Listener<T> = (payload: T) => void;

/**
 * A small typed event emitter. Unlike Node's EventEmitter it has no special
 * `'error'` event, and a listener that throws is logged and skipped
 * (graphile-worker's "safeEmit"), so no event can crash a worker.
 */
export class TypedEmitter<Events extends object> implements EventSink<Events> {
  readonly #listeners = new Map<keyof Events, Set<Listener<never>>>();
  readonly #logger: () => Logger | undefined;

  constructor(logger: () => Logger | undefined = () => undefined) {
    this.#logger = logger;
  }

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => this.off(event, listener);
  }

  /** Adds a listener that runs once. */
  once<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    const off = this.on(event, (payload) => {
      off();
      listener(payload);
    });
    return off;
  }

  off<K extends keyof Events>(event: K, listener: Listener<Events[K]>): void {
    this.#listeners.get(event)?.delete(listener as Listener<never>);
  }

  /** Calls every listener of `event`; a listener that throws is logged, the rest still run. */
  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as Listener<Events[K]>)(payload);
      } catch (error) {
        this.#logger()?.error({ err: error, event }, 'event listener threw');
      }
    }
  }
}
