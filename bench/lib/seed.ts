import { pino } from 'pino';
import { createBaton, type Baton } from 'baton-jobs';

/** Opens a silent Baton client on `url` (migrations run). Close it when done. */
export function openClient(url: string): Promise<Baton> {
  return createBaton({ database: url, logger: pino({ level: 'silent' }) });
}

/**
 * Enqueues `count` jobs of `task` (payload `{ i }`) with `enqueueMany` in batches
 * of `batch`; returns the time it took in ms.
 */
export async function enqueueInBatches(baton: Baton, task: string, count: number, batch: number): Promise<number> {
  const started = performance.now();
  for (let from = 0; from < count; from += batch) {
    const items = [];
    for (let i = from; i < Math.min(count, from + batch); i++) items.push({ task, payload: { i } });
    await baton.enqueueMany(items);
  }
  return performance.now() - started;
}
