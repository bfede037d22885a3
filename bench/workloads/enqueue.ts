import { enqueueInBatches, openClient } from '../lib/seed.js';
import { perSecond, round } from '../lib/stats.js';
import type { Workload } from '../lib/workload.js';

/**
 * Workload 1: enqueue throughput from one client (in the runner's process):
 * 20,000 jobs (full size) with `enqueueMany` in batches of 1,000, and 2,000 one-by-one
 * `enqueue` calls (each its own transaction), each on a fresh database.
 */
export const enqueue: Workload = {
  name: 'enqueue',
  title: 'bulk and one-by-one enqueue throughput',
  async run(ctx) {
    const { bulk: BULK, batch: BATCH, single: SINGLE } = ctx.sizes;
    const bulkBaton = await openClient(await ctx.database('enqueue-bulk'));
    let bulkMs: number;
    try {
      bulkMs = await enqueueInBatches(bulkBaton, 'noop', BULK, BATCH);
    } finally {
      await bulkBaton.close();
    }
    ctx.log(`enqueueMany: ${BULK} jobs in ${round(bulkMs, 0)} ms`);

    const singleBaton = await openClient(await ctx.database('enqueue-single'));
    let singleMs: number;
    try {
      const started = performance.now();
      for (let i = 0; i < SINGLE; i++) await singleBaton.enqueue('noop', { i });
      singleMs = performance.now() - started;
    } finally {
      await singleBaton.close();
    }
    ctx.log(`enqueue: ${SINGLE} jobs in ${round(singleMs, 0)} ms`);

    return {
      figures: [
        {
          workload: '1. enqueue',
          name: `enqueueMany, ${BULK.toLocaleString('en')} jobs in batches of ${BATCH.toLocaleString('en')}`,
          value: perSecond(BULK, bulkMs),
          unit: 'jobs/s',
          detail: { jobs: BULK, batch: BATCH, ms: bulkMs },
        },
        {
          workload: '1. enqueue',
          name: `enqueue one by one, ${SINGLE.toLocaleString('en')} jobs (sequential awaits)`,
          value: perSecond(SINGLE, singleMs),
          unit: 'jobs/s',
          detail: { jobs: SINGLE, ms: singleMs },
        },
      ],
      settings: ['enqueue: one client in the runner process, payload `{ i }`, task by name (no schema)'],
    };
  },
};
