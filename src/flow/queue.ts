import * as z from 'zod';
import type { Clock } from '../clock.js';
import { ConfigError } from '../errors.js';
import { parseConfig, storableString } from '../validation.js';
import { concurrencySchema, rateSchema, type Rate } from './limits.js';
import { queueRetentionSchema, type QueueRetention } from '../maintenance/retention.js';
import type { Store } from '../store/store.js';

const QUEUE_BRAND = Symbol.for('baton.queue');

/** What `defineQueue` takes: the queue's fleet-wide settings, declared in code. Each left out (or null) is none. */
export interface QueueOptions {
  /** The most of its jobs running at once across the whole fleet, 1..1000000 (as `baton queue limit`). @defaultValue none */
  concurrency?: number | null;
  /** At most `limit` starts in any window of `periodMs` ms, fleet-wide (as `baton queue rate`). @defaultValue none */
  rateLimit?: Rate | null;
  /** The same for each of its concurrency keys apart (as `baton queue rate --per-key`). @defaultValue none */
  perKeyRateLimit?: Rate | null;
  /**
   * Retention of its finished jobs (ages per state, ms or false; `keep`: at most N), for
   * the pruner of a worker that serves it; the worker's `retention.queues[name]` wins
   * state by state, a task's `retention` wins over both. @defaultValue the worker's
   */
  retention?: QueueRetention;
}

/** A queue declared in code. Create with {@link defineQueue}; give to `createBaton({ queues })` or a task's `queue`. */
export interface Queue {
  readonly [QUEUE_BRAND]: true;
  readonly name: string;
  readonly concurrency: number | null;
  readonly rateLimit: Rate | null;
  readonly perKeyRateLimit: Rate | null;
  readonly retention: QueueRetention | undefined;
}

const optionsSchema = z.strictObject({
  concurrency: concurrencySchema.optional(),
  rateLimit: rateSchema.optional(),
  perKeyRateLimit: rateSchema.optional(),
  retention: queueRetentionSchema.optional(),
});
const nameSchema = storableString().min(1).max(200);

/**
 * Declares a queue and its fleet-wide settings in code (as DBOS's `WorkflowQueue`,
 * BullMQ's worker `limiter`). Stored when `createBaton({ queues })` opens the database and
 * when a worker serving it starts (`queueDeclare`: idempotent, safe with many processes
 * starting at once): each setting is then in force unless an override set by
 * `baton queue limit|rate`, the dashboard or the HTTP API holds it (clear that with
 * `--clear`); a deploy that changes a declared value takes effect when it starts.
 *
 * @example
 * export const emails = defineQueue('emails', { concurrency: 20, rateLimit: { limit: 100, periodMs: 60_000 } });
 * export const send = defineTask('send', { queue: emails, handler: async (p) => {} });
 * @throws ConfigError on a bad name (1-200 characters, no NUL or lone surrogate) or bad options, naming the option
 */
export function defineQueue(name: string, options: QueueOptions = {}): Queue {
  const queue = nameSchema.safeParse(name);
  if (!queue.success) throw new ConfigError(`queue name ${JSON.stringify(name)} is invalid: use 1-200 characters, no NUL or lone UTF-16 surrogate`);
  const o = parseConfig(optionsSchema, options, `queue "${name}" option`);
  return Object.freeze({
    [QUEUE_BRAND]: true as const,
    name,
    concurrency: o.concurrency ?? null,
    rateLimit: o.rateLimit ? Object.freeze({ ...o.rateLimit }) : null,
    perKeyRateLimit: o.perKeyRateLimit ? Object.freeze({ ...o.perKeyRateLimit }) : null,
    retention: o.retention ? Object.freeze({ ...o.retention }) : undefined,
  });
}

/** True when `value` was made by `defineQueue` (any copy of the package). */
export function isQueue(value: unknown): value is Queue {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[QUEUE_BRAND] === true;
}

/**
 * The distinct queue definitions among `queues`: the same object given twice counts once,
 * as do two definitions with the same settings.
 * @throws ConfigError when two definitions of one name differ (`where` names the source, e.g. "worker option tasks")
 */
export function distinctQueues(queues: ReadonlyArray<Queue>, where: string): Queue[] {
  const byName = new Map<string, Queue>();
  for (const queue of queues) {
    const seen = byName.get(queue.name);
    if (!seen) byName.set(queue.name, queue);
    else if (seen !== queue && JSON.stringify(settingsOf(seen)) !== JSON.stringify(settingsOf(queue))) {
      throw new ConfigError(`${where}: queue "${queue.name}" is defined twice with different settings (define it once with defineQueue and share the object)`);
    }
  }
  return [...byName.values()];
}

const settingsOf = (q: Queue) => [q.concurrency, q.rateLimit, q.perKeyRateLimit, q.retention];

/**
 * Stores the declarations (Store.queueDeclare) and reports the queues whose row was written.
 * @returns the names of the queues whose stored settings changed
 * @throws StoreError
 */
export async function declareQueues(deps: { store: Store; clock: Clock }, queues: ReadonlyArray<Queue>): Promise<string[]> {
  if (queues.length === 0) return [];
  return deps.store.queueDeclare({
    queues: queues.map((q) => ({ name: q.name, concurrency: q.concurrency, rateLimit: q.rateLimit, keyRateLimit: q.perKeyRateLimit })),
    now: deps.clock.now(),
  });
}
