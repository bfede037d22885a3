import { Hono } from 'hono';
import { z } from 'zod';
import type { Baton } from '../../baton.js';
import { NotFoundError, ValidationError, ConflictError, type ValidationIssue } from '../../errors.js';
import type { AnyTask } from '../../job/task.js';
import { JOB_STATES, type EnqueueOptions } from '../../job/types.js';
import { readJson } from '../body.js';
import { jobJson } from '../serialize.js';

/** zod issues → ValidationError issues. */
export function invalid(message: string, error: z.ZodError): ValidationError {
  return new ValidationError(message, error.issues.map((i): ValidationIssue => ({ path: i.path.filter((p) => typeof p !== 'symbol') as (string | number)[], message: i.message })));
}

const enqueueBody = z.strictObject({
  task: z.string().min(1).max(200),
  payload: z.unknown().optional(),
  options: z
    .strictObject({
      queue: z.string().min(1).max(200).optional(),
      priority: z.number().int().optional(),
      runAt: z.iso.datetime({ offset: true }).optional(),
      delay: z.number().int().min(0).optional(),
      maxAttempts: z.number().int().optional(),
      timeout: z.number().int().optional(),
      key: z.string().max(1000).optional(),
    })
    .optional(),
});

const listQuery = z.strictObject({
  state: z.enum(JOB_STATES).optional(),
  queue: z.string().min(1).optional(),
  task: z.string().min(1).optional(),
  limit: z.string().regex(/^\d{1,4}$/, 'an integer 1..1000').transform(Number).pipe(z.number().int().min(1).max(1000)).optional(),
  cursor: z.string().regex(/^[1-9]\d{0,15}$/, 'a cursor from nextCursor').transform(Number).optional(),
});

const cancelBody = z.strictObject({ reason: z.string().max(10_000).nullable().optional() });

/** `:id` → a positive integer. @throws ValidationError */
export function jobId(text: string): number {
  if (!/^[1-9]\d{0,15}$/.test(text) || !Number.isSafeInteger(Number(text))) throw new ValidationError(`job id must be a positive integer, not ${JSON.stringify(text.slice(0, 40))}`);
  return Number(text);
}

/** /api/jobs: enqueue, list, get, cancel, retry. */
export function jobRoutes(baton: Baton, options: { tasks: Map<string, AnyTask> | undefined; bodyLimit: number }): Hono {
  const app = new Hono();
  const now = () => baton.clock.now();

  app.post('/', async (c) => {
    const parsed = enqueueBody.safeParse(await readJson(c, options.bodyLimit));
    if (!parsed.success) throw invalid('invalid enqueue request', parsed.error);
    const { task, payload, options: o = {} } = parsed.data;
    const enqueueOptions: EnqueueOptions = {};
    for (const [key, value] of Object.entries(o)) if (value !== undefined) (enqueueOptions as Record<string, unknown>)[key] = key === 'runAt' ? new Date(value as string) : value;
    let job;
    if (options.tasks) {
      const known = options.tasks.get(task);
      if (!known) throw new NotFoundError(`unknown task "${task}": this server knows ${[...options.tasks.keys()].map((n) => `"${n}"`).join(', ') || 'no tasks'}`);
      job = await baton.enqueue(known, payload as never, enqueueOptions);
    } else {
      job = await baton.enqueue(task, payload, enqueueOptions);
    }
    return c.json(jobJson(job, now()), 201);
  });

  app.get('/', async (c) => {
    const parsed = listQuery.safeParse(c.req.query());
    if (!parsed.success) throw invalid('invalid job list query', parsed.error);
    const { cursor, limit = 50, ...filter } = parsed.data;
    const items = await baton.listJobs({ ...filter, limit, ...(cursor === undefined ? {} : { before: cursor }) });
    const last = items.at(-1);
    return c.json({ items: items.map((job) => jobJson(job, now())), nextCursor: items.length === limit && last ? String(last.id) : null });
  });

  app.get('/:id', async (c) => c.json(jobJson(await baton.getJob(jobId(c.req.param('id'))), now())));

  app.post('/:id/cancel', async (c) => {
    const id = jobId(c.req.param('id'));
    const parsed = cancelBody.safeParse(await readJson(c, options.bodyLimit));
    if (!parsed.success) throw invalid('invalid cancel request', parsed.error);
    const result = await baton.cancel(id, parsed.data.reason ?? undefined);
    if (result.outcome === 'unchanged') throw new ConflictError(`job ${id} is already ${result.job.state}; nothing to cancel`, result.job.state);
    return c.json({ outcome: result.outcome, job: jobJson(result.job, now()) });
  });

  app.post('/:id/retry', async (c) => {
    const id = jobId(c.req.param('id'));
    await readJson(c, options.bodyLimit);
    return c.json(jobJson(await baton.retry(id), now()));
  });

  return app;
}
