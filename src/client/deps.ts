import type { Clock } from '../clock.js';
import type { AnyTask } from '../job/task.js';
import type { TypedEmitter } from '../observe/events.js';
import type { Store } from '../store/store.js';
import type { Tracing } from '../observe/tracing.js';
import type { ClientEvents } from './events.js';

/** What the client functions share. */
export interface ClientDeps {
  store: Store;
  clock: Clock;
  events: TypedEmitter<ClientEvents>;
  /** Known tasks by name; enqueue by name checks against it when it is not empty. */
  tasks: Map<string, AnyTask>;
  /** Limit of serialized payloads in bytes. */
  payloadLimit: number;
  /** Spans for enqueues (observe/tracing.ts). */
  tracing: Tracing;
  /** Called after each enqueue by name, with the name: warns once when no live worker serves it (unserved-task-warning.ts). */
  noteTaskByName: (task: string) => void;
  /**
   * Subscribes to this process's writes to jobs (store operations of
   * `JOB_WRITE_OPS`, client/follow.ts), called after each one succeeded; returns
   * unsubscribe. What `followJob` hears of changes the store's watch does not report.
   */
  onLocalWrite(listener: () => void): () => void;
}
