import { Hono } from 'hono';
import * as z from 'zod';
import type { Baton } from '../../baton.js';
import type { QueueInfo } from '../../client/queues.js';
import { parseInput } from '../../validation.js';
import { limitText } from './jobs.js';

/** Minutes of throughput `GET /api/queues` answers. */
export const THROUGHPUT_MINUTES = 15;

/**
 * Counts per queue with zeros for absent states, whether it is paused (a paused queue
 * with no job too), its concurrency limit and its rate limits with their windows (null: none).
 */
export async function queueSummary(baton: Baton): Promise<Array<Omit<QueueInfo, 'name'> & { queue: string }>> {
  return (await baton.queues.list()).map(({ name, ...rest }) => ({ queue: name, ...rest }));
}

/** The query of `GET /api/queues/keys`; the queue name is the client's to check (it names the problem). */
const keysQuery = z.strictObject({ queue: z.string().optional(), limit: limitText.optional() });

/**
 * GET /api/queues (counts by state, paused state, concurrency limit, throughput per minute),
 * GET /api/queues/keys (the busiest concurrency keys with live jobs) and GET /api/workers (the registry).
 */
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
  // An exact path: POST /queues/:name/pause etc. still serve a queue named "keys".
  app.get('/queues/keys', async (c) => {
    const { queue, limit } = parseInput(keysQuery, c.req.query(), 'invalid concurrency keys query');
    return c.json({ keys: await baton.queues.keys(queue, limit === undefined ? {} : { limit }) });
  });
  app.get('/workers', async (c) => c.json({ workers: await baton.listWorkers() }));
  return app;
}
