import { Hono } from 'hono';
import type { Baton } from '../../baton.js';
import type { JobState } from '../../job/types.js';

/** Minutes of throughput `GET /api/queues` answers. */
export const THROUGHPUT_MINUTES = 15;

/** Counts per queue with zeros for absent states, whether it is paused (a paused queue with no job too), and its concurrency limit (null: none). */
export async function queueSummary(
  baton: Baton,
): Promise<Array<{ queue: string; counts: Record<JobState, number>; paused: boolean; pausedAt: Date | null; concurrency: number | null }>> {
  return (await baton.queues.list()).map(({ name, counts, paused, pausedAt, concurrency }) => ({ queue: name, counts, paused, pausedAt, concurrency }));
}

/** GET /api/queues (counts by state, paused state, concurrency limit, throughput per minute) and GET /api/workers (the registry). */
export function fleetRoutes(baton: Baton): Hono {
  const app = new Hono();
  app.get('/queues', async (c) => {
    const [summary, throughput] = await Promise.all([queueSummary(baton), baton.queueThroughput(THROUGHPUT_MINUTES)]);
    const empty = () => {
      const current = Math.floor(baton.clock.now() / 60_000) * 60_000;
      return Array.from({ length: THROUGHPUT_MINUTES }, (_, i) => ({ minute: new Date(current - (THROUGHPUT_MINUTES - 1 - i) * 60_000), completed: 0, failed: 0 }));
    };
    return c.json({ queues: summary.map((q) => ({ ...q, throughput: throughput.get(q.queue) ?? empty() })) });
  });
  app.get('/workers', async (c) => c.json({ workers: await baton.listWorkers() }));
  return app;
}
