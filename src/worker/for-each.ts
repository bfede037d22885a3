import { ConfigError } from '../errors.js';
import type { Json } from '../job/types.js';

/** Options of `ctx.forEach`. */
export interface ForEachOptions {
  /** Items processed at once. @defaultValue 4 */
  concurrency?: number;
  /** Name of the record in the checkpoint (`checkpoint[key]`), for jobs with several loops. @defaultValue 'forEach' */
  key?: string;
  /** Save the record after this many completed items. @defaultValue 100 */
  checkpointEvery?: number;
  /**
   * Report progress as `(items done, items.length)` through `ctx.progress`, where
   * items done counts the items skipped from the checkpoint too, so a resumed run
   * carries on from where the last one stopped and a completed loop shows
   * current = total. A string is the progress message; `false` reports nothing
   * (for a handler that reports its own progress).
   * @defaultValue true
   */
  progress?: boolean | string;
}

/** What `ctx.forEach` resolves with. */
export interface ForEachResult {
  /** Items done in this call. */
  done: number;
  /** Items skipped because a previous attempt had done them. */
  skipped: number;
}

/** The item callback: `index` is the item's position in `items`. */
export type ForEachFn<T> = (item: T, info: { index: number; signal: AbortSignal }) => Promise<void> | void;

/** What forEach needs from the job context. */
export interface ForEachHost {
  signal: AbortSignal;
  readonly checkpoint: Json;
  saveCheckpoint(value: Json): Promise<void>;
  progress(current: number, total?: number, message?: string): void;
}

/**
 * Graceful concurrent loop with resume. Runs `fn` over `items`, at most
 * `concurrency` at once. The indices done are recorded in the job's checkpoint
 * as `checkpoint[key] = { done: [[from, to], …] }` (inclusive ranges), saved every
 * `checkpointEvery` items and when the loop stops; on a later attempt (after a
 * release, crash or retry) items recorded done are skipped, so `items` must come
 * in the same order each attempt. Other keys of an object checkpoint are kept.
 * Unless `options.progress` is false it reports progress (throttled, like
 * `ctx.progress`) at the start and after each item, counting skipped items as done.
 *
 * On abort it starts no new item, lets running items finish (they see the
 * signal), saves the record, then throws `signal.reason`. When an item throws it
 * does the same and rethrows that item's error.
 *
 * @throws ConfigError when the checkpoint holds a non-object value
 */
export async function forEach<T>(host: ForEachHost, items: readonly T[], fn: ForEachFn<T>, options: ForEachOptions = {}): Promise<ForEachResult> {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 4));
  const every = Math.max(1, Math.floor(options.checkpointEvery ?? 100));
  const key = options.key ?? 'forEach';
  const base = host.checkpoint;
  if (base !== null && (typeof base !== 'object' || Array.isArray(base))) {
    throw new ConfigError('ctx.forEach keeps its record in an object checkpoint; this job saved a non-object checkpoint');
  }
  const done = new Set(expandRanges((base?.[key] as { done?: number[][] } | undefined)?.done));
  const skipped = items.reduce<number>((n, _, i) => n + (done.has(i) ? 1 : 0), 0);
  let next = 0;
  let finished = 0;
  let sinceSave = 0;
  let failure: { error: unknown } | undefined;
  const message = typeof options.progress === 'string' ? options.progress : undefined;
  const report = options.progress === false ? () => {} : () => host.progress(skipped + finished, items.length, message);
  report();

  const save = async () => {
    sinceSave = 0;
    const current = host.checkpoint as Record<string, Json> | null;
    await host.saveCheckpoint({ ...(current ?? {}), [key]: { done: compressRanges(done) } });
  };

  const worker = async () => {
    while (!failure && !host.signal.aborted) {
      while (next < items.length && done.has(next)) next++;
      if (next >= items.length) return;
      const index = next++;
      try {
        await fn(items[index]!, { index, signal: host.signal });
      } catch (error) {
        failure ??= { error };
        return;
      }
      done.add(index);
      finished++;
      report();
      if (++sinceSave >= every) await save();
    }
  };

  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (sinceSave > 0 || failure || host.signal.aborted) await save();
  if (failure) throw failure.error;
  if (host.signal.aborted) throw host.signal.reason;
  return { done: finished, skipped };
}

/** [[0,2],[5,5]] → 0,1,2,5 */
function expandRanges(ranges: number[][] | undefined): number[] {
  const out: number[] = [];
  for (const [from, to] of ranges ?? []) for (let i = from!; i <= to!; i++) out.push(i);
  return out;
}

/** {0,1,2,5} → [[0,2],[5,5]] */
function compressRanges(indices: Set<number>): number[][] {
  const sorted = [...indices].sort((a, b) => a - b);
  const ranges: number[][] = [];
  for (const i of sorted) {
    const last = ranges.at(-1);
    if (last && last[1] === i - 1) last[1] = i;
    else ranges.push([i, i]);
  }
  return ranges;
}
