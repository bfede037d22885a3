import type { Logger } from 'pino';
import { sleep, type Clock } from '../clock.js';
import { defineService, type Service } from '../lease/service.js';
import type { EventSink } from '../observe/events.js';
import type { FinishedState, Store } from '../store/store.js';
import { pruneRules, type AgeRule, type KeepRule, type RetentionOptions, type StateRetention } from './retention.js';

/** The name of the pruner's service (its row and its lease `service:baton:pruner`). */
export const PRUNER_SERVICE = 'baton:pruner';

/** Pause between two delete batches, ms: lets other writers (other SQLite processes) take the lock. */
const BATCH_PAUSE_MS = 5;

/** What the pruner reports; a worker running it emits these among its own (WorkerEvents). */
export interface PrunerEvents {
  /**
   * One delete batch removed `deleted` (≥ 1) finished jobs. An age rule names its
   * `state` and `finishedBefore` (the cutoff: now − retention), a keep-N rule its
   * `keep`; `queue`/`task` name the rule's scope (null: every queue or task not
   * set apart). `durationMs`: the statement's time.
   */
  'jobs:pruned': {
    deleted: number;
    state: FinishedState | null;
    queue: string | null;
    task: string | null;
    finishedBefore: Date | null;
    keep: number | null;
    durationMs: number;
  };
}

/** What one pass did. */
export interface PruneReport {
  /** Jobs deleted. */
  deleted: number;
  /** Delete statements that removed at least one job. */
  batches: number;
  /** True when the signal stopped the pass before every rule was done. */
  aborted: boolean;
}

/** What a pruner needs from the worker that runs it. */
export interface PrunerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  events: EventSink<PrunerEvents>;
  /** The worker's retention option (not false). */
  options: RetentionOptions;
  /** The worker's tasks: their `retention` overrides the queue's and the defaults. */
  tasks: ReadonlyArray<{ name: string; retention?: StateRetention | undefined }>;
}

/**
 * The pruner of finished jobs (River's JobCleaner, Oban's Pruner). One pass applies
 * every rule of {@link pruneRules}: per state and scope, `jobDeleteFinished` with
 * cutoff now − retention; per queue with `keep`, `jobDeleteFinishedBeyond`; then
 * deletes the logged starts no rate limit's window counts any more (`rateStartsPrune`). Each
 * rule deletes in batches of `batchSize` (one short statement each, oldest first)
 * until a batch comes back short, pausing {@link BATCH_PAUSE_MS} between batches,
 * so no statement locks or reads the whole table and other writers get their turn.
 * ```
 * rule ──► delete batch ──full──► pause ──► delete batch …
 *                       └─short─► next rule ──► … ──► report
 * ```
 * It runs as the built-in service {@link PRUNER_SERVICE} under a lease (lease/service.ts):
 * every worker hosts one, exactly one instance in the fleet prunes at a time, and
 * the next pass is due `interval` after the last one began. `baton services` lists
 * it; pausing the service pauses pruning fleet-wide.
 *
 * Tests call `runOnce(now)` with an injected time instead of waiting for the service.
 */
export class Pruner {
  readonly #deps: PrunerDeps;
  readonly #rules: { age: AgeRule[]; keep: KeepRule[] };
  readonly #batchSize: number;
  /** Time between two passes, ms. */
  readonly interval: number;

  constructor(deps: PrunerDeps) {
    this.#deps = deps;
    this.#rules = pruneRules(deps.options, deps.tasks);
    this.#batchSize = deps.options.batchSize ?? 1000;
    this.interval = deps.options.interval ?? 60_000;
  }

  /** The service that runs a pass every `interval` on whichever worker holds its lease. */
  service(): Service {
    return defineService(PRUNER_SERVICE, {
      run: async ({ signal }) => {
        const started = this.#deps.clock.now();
        await this.runOnce(started, signal);
        return new Date(started + this.interval);
      },
      maxWait: this.interval,
    });
  }

  /**
   * One pass: every rule, batch after batch, at `now`. A batch that deleted
   * anything emits `jobs:pruned`. Stops between batches when `signal` aborts (the
   * lease was lost, or shutdown): what was deleted stays deleted.
   * @param now - ms since the epoch; the cutoff of each age rule is now − its retention
   * @returns the jobs deleted and the batches that deleted any
   * @throws StoreError when the database cannot be reached (op "jobDeleteFinished" or "jobDeleteFinishedBeyond")
   */
  async runOnce(now = this.#deps.clock.now(), signal?: AbortSignal): Promise<PruneReport> {
    const report: PruneReport = { deleted: 0, batches: 0, aborted: false };
    const { store } = this.#deps;
    const limit = this.#batchSize;
    // A rule without `event` deletes what is not a job (the rate limits' old starts).
    const rules: Array<{ event?: Omit<PrunerEvents['jobs:pruned'], 'deleted' | 'durationMs'>; batch: () => Promise<number> }> = [
      ...this.#rules.age.map((rule) => {
        const finishedBefore = now - rule.maxAgeMs;
        return {
          event: { state: rule.state, queue: rule.queue ?? null, task: rule.task ?? null, finishedBefore: new Date(finishedBefore), keep: null },
          batch: () => store.jobDeleteFinished({ states: [rule.state], queue: rule.queue, task: rule.task, exceptQueues: rule.exceptQueues, exceptTasks: rule.exceptTasks, finishedBefore, limit }),
        };
      }),
      ...this.#rules.keep.map((rule) => ({
        event: { state: null, queue: rule.queue, task: null, finishedBefore: null, keep: rule.keep },
        batch: () => store.jobDeleteFinishedBeyond({ queue: rule.queue, keep: rule.keep, limit }),
      })),
      { batch: () => store.rateStartsPrune({ now, limit }) },
    ];
    for (const rule of rules) {
      for (;;) {
        if (signal?.aborted) {
          report.aborted = true;
          return this.#log(report);
        }
        const started = performance.now();
        const deleted = await rule.batch();
        if (deleted > 0 && rule.event) {
          report.deleted += deleted;
          report.batches++;
          this.#deps.events.emit('jobs:pruned', { ...rule.event, deleted, durationMs: performance.now() - started });
        }
        if (deleted < limit) break;
        await sleep(BATCH_PAUSE_MS, signal).catch(() => undefined);
      }
    }
    return this.#log(report);
  }

  #log(report: PruneReport): PruneReport {
    if (report.deleted > 0 || report.aborted) this.#deps.logger.info(report, report.aborted ? 'pruning pass stopped early' : 'pruned finished jobs');
    return report;
  }
}
