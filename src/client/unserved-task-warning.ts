import type { Clock } from '../clock.js';
import type { Logger } from '../observe/logger.js';
import type { Store } from '../store/store.js';

/** How long the fleet's task set is reused before it is read again, ms. */
export const FLEET_TASKS_REFRESH_MS = 5000;

/**
 * Warns, once per task name per process, when a job is enqueued by name for a task
 * that no live worker registers (a typo, or a worker that was never deployed): such a
 * job waits for ever, and `baton queues`, the dashboard and the metrics say so too.
 *
 * Off the hot path: `note` never waits and never queries per enqueue. It checks the
 * name against the fleet's task set (every live worker's `tasks`), read with
 * `workerList` at most once per `refreshMs` and in the background (one read at a time;
 * names noted meanwhile are checked when it answers). No warning while no live worker
 * is registered at all (workers often start after the first enqueues), nor while any
 * live worker registered without tasks (an older version: it may serve anything). A
 * failed read is logged at debug and tried again at the next enqueue.
 * @param options.refreshMs - ms a read of the fleet is reused @defaultValue FLEET_TASKS_REFRESH_MS
 * @returns `note(task)`: call after an enqueue by name of `task`
 */
export function unservedTaskWarning(options: { store: Store; clock: Clock; logger: Logger; refreshMs?: number }): (task: string) => void {
  const refreshMs = options.refreshMs ?? FLEET_TASKS_REFRESH_MS;
  const warned = new Set<string>();
  const waiting = new Set<string>();
  /** The fleet's tasks at `at`; `tasks` null: nothing to warn about (no worker, or one of unknown tasks). */
  let fleet: { at: number; tasks: Set<string> | null } | undefined;
  let reading = false;

  const check = (task: string) => {
    if (warned.has(task) || !fleet?.tasks || fleet.tasks.has(task)) return;
    warned.add(task);
    options.logger.warn({ task }, `no live worker serves task "${task}": its jobs wait until a worker that registers it starts (known to the fleet: ${[...fleet.tasks].sort().map((t) => `"${t}"`).join(', ')})`);
  };
  const read = () => {
    reading = true;
    const at = options.clock.now();
    options.store.workerList({ now: at }).then(
      (workers) => {
        const unknown = workers.length === 0 || workers.some((w) => w.tasks === null);
        fleet = { at, tasks: unknown ? null : new Set(workers.flatMap((w) => w.tasks ?? [])) };
        for (const task of waiting) check(task);
      },
      (error: unknown) => options.logger.debug({ err: error }, 'could not read the worker registry to check enqueued task names'),
    ).finally(() => {
      reading = false;
      waiting.clear();
    });
  };
  return (task) => {
    if (warned.has(task)) return;
    if (fleet && options.clock.now() - fleet.at < refreshMs) return check(task);
    waiting.add(task);
    if (!reading) read();
  };
}
