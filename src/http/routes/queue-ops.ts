import { Hono, type Context } from 'hono';
import * as z from 'zod';
import type { Baton } from '../../baton.js';
import type { BulkFilter } from '../../client/bulk.js';
import type { Rate } from '../../client/queues.js';
import { parseInput } from '../../validation.js';
import { readJson } from '../body.js';
import { jobId, runAtText } from './jobs.js';

/**
 * The body of a bulk request: the filter fields and the options side by side. Only
 * what JSON cannot say is done here (times as ISO 8601 text → Date); the client
 * checks the values (the states an operation applies to, an empty filter without
 * `all`, the batch size) and names each field.
 */
const bulkBody = z.strictObject({
  state: z.string().optional(),
  queue: z.string().optional(),
  task: z.string().optional(),
  createdBefore: runAtText.optional(),
  finishedBefore: runAtText.optional(),
  all: z.boolean().optional(),
  dryRun: z.boolean().optional(),
  batchSize: z.number().optional(),
  limit: z.number().optional(),
});
/** Each bulk request's body: the filter and options, plus its operation's own. */
const BULK_BODIES = {
  'retry-many': bulkBody.extend({ fresh: z.boolean().optional() }),
  'cancel-many': bulkBody.extend({ reason: z.string().optional() }),
  purge: bulkBody,
};

/** Reads a bulk body and splits it into the client's filter and options (fields left out stay out). @throws ValidationError */
async function readBulk(c: Context, bodyLimit: number, what: keyof typeof BULK_BODIES) {
  const body = parseInput(BULK_BODIES[what], await readJson(c, bodyLimit), `invalid ${what} request`);
  const { dryRun, batchSize, limit, reason, fresh, ...filter } = body as z.output<typeof bulkBody> & { reason?: string; fresh?: boolean };
  const options = {
    ...(dryRun === undefined ? {} : { dryRun }),
    ...(batchSize === undefined ? {} : { batchSize }),
    ...(limit === undefined ? {} : { limit }),
    ...(reason === undefined ? {} : { reason }),
    ...(fresh === undefined ? {} : { fresh }),
  };
  // The client checks the filter's values (states, names) and names each field.
  return { filter: filter as BulkFilter, options };
}

const pauseBody = z.strictObject({ force: z.boolean().optional() });
/** The limit is checked by the client (which names it); here only the body's shape. */
const concurrencyBody = z.strictObject({ concurrency: z.unknown(), force: z.boolean().optional() });
const perKeyQuery = z.enum(['true', 'false']);
const rateBody = z.strictObject({ rate: z.unknown(), perKey: z.boolean().optional(), force: z.boolean().optional() });

/**
 * Queue operations (admin token): POST /api/queues/:name/pause|resume,
 * PUT /api/queues/:name/concurrency, PUT /api/queues/:name/rate-limit (overrides of what
 * the code declares), DELETE of either (drops the override; `?perKey=true` for the per-key rate),
 * DELETE /api/jobs/:id, POST /api/jobs/retry-many|cancel-many|purge.
 */
export function queueOpRoutes(baton: Baton, options: { bodyLimit: number }): Hono {
  const app = new Hono();
  app.post('/queues/:name/pause', async (c) => {
    const body = parseInput(pauseBody, await readJson(c, options.bodyLimit), 'invalid pause request');
    return c.json(await baton.queues.pause(c.req.param('name'), body));
  });
  app.post('/queues/:name/resume', async (c) => {
    await readJson(c, options.bodyLimit);
    return c.json(await baton.queues.resume(c.req.param('name')));
  });
  app.put('/queues/:name/concurrency', async (c) => {
    const { concurrency, force } = parseInput(concurrencyBody, await readJson(c, options.bodyLimit), 'invalid concurrency request');
    return c.json(await baton.queues.setConcurrency(c.req.param('name'), (concurrency ?? null) as number | null, force === undefined ? {} : { force }));
  });
  app.put('/queues/:name/rate-limit', async (c) => {
    const { rate, ...o } = parseInput(rateBody, await readJson(c, options.bodyLimit), 'invalid rate limit request');
    return c.json(await baton.queues.setRateLimit(c.req.param('name'), (rate ?? null) as Rate | null, o));
  });
  // DELETE drops the override: the value the queue's code declares (defineQueue) is in force again.
  app.delete('/queues/:name/concurrency', async (c) => c.json(await baton.queues.clearOverride(c.req.param('name'), 'concurrency')));
  app.delete('/queues/:name/rate-limit', async (c) => {
    const perKey = parseInput(perKeyQuery, c.req.query('perKey') ?? 'false', 'invalid perKey (true or false)');
    return c.json(await baton.queues.clearOverride(c.req.param('name'), perKey === 'true' ? 'keyRateLimit' : 'rateLimit'));
  });
  app.delete('/jobs/:id', async (c) => c.json(await baton.jobs.delete(jobId(c.req.param('id')))));
  app.post('/jobs/retry-many', async (c) => {
    const { filter, options: o } = await readBulk(c, options.bodyLimit, 'retry-many');
    return c.json(await baton.jobs.retryMany(filter, o));
  });
  app.post('/jobs/cancel-many', async (c) => {
    const { filter, options: o } = await readBulk(c, options.bodyLimit, 'cancel-many');
    return c.json(await baton.jobs.cancelMany(filter, { ...o, by: 'http' }));
  });
  app.post('/jobs/purge', async (c) => {
    const { filter, options: o } = await readBulk(c, options.bodyLimit, 'purge');
    return c.json(await baton.jobs.purge(filter, o));
  });
  return app;
}
