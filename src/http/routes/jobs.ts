import { Hono } from 'hono';
import * as z from 'zod';
import type { Baton } from '../../baton.js';
import { NotFoundError, ValidationError, ConflictError } from '../../errors.js';
import type { AnyTask } from '../../job/task.js';
import { loadTracing } from '../../observe/tracing.js';
import { JOB_STATES, type EnqueueOptions } from '../../job/types.js';
import { parseInput, parseIsoDateTime, queueNameSchema, storableString, withPathPrefix } from '../../validation.js';
import { readJson } from '../body.js';
import { boundedJson, jobDetailJson, jobJson, JOB_VALUES } from '../serialize.js';
import { notPromotedMessage } from '../../client/promote.js';
import { WaitTimeoutError } from '../../client/wait-result.js';

/** `options.runAt` (and the times of bulk filters): the ISO 8601 grammar the CLI's `--run-at` shares (no impossible calendar dates), as a Date. */
export const runAtText = z.string().transform((text, ctx) => {
  const parsed = parseIsoDateTime(text);
  if (typeof parsed !== 'string') return parsed;
  ctx.addIssue({ code: 'custom', message: parsed });
  return z.NEVER;
});

/**
 * The JSON shape of an enqueue request. Only what JSON cannot say as the client
 * wants it is checked here (`runAt` is an ISO 8601 string, turned into a Date by
 * {@link parseIsoDateTime}; the
 * client's `client` option has no JSON form); the options' values and limits are the
 * client's to check, once, and its issues come back under `options.`.
 */
const enqueueBody = z.strictObject({
  task: storableString().min(1).max(200),
  payload: z.unknown().optional(),
  options: z
    .looseObject({
      runAt: runAtText.optional(),
      client: z.never({ error: 'not accepted over HTTP (transactional enqueue is for in-process callers)' }).optional(),
    })
    .optional(),
});
/** A `limit` query parameter: an integer 1..1000 as text, as a number. */
export const limitText = z.string().regex(/^\d{1,4}$/, 'an integer 1..1000').transform(Number).pipe(z.number().int().min(1).max(1000));

const listQuery = z.strictObject({
  state: z.enum(JOB_STATES).optional(),
  queue: queueNameSchema.optional(),
  task: storableString().min(1).optional(),
  limit: limitText.optional(),
  cursor: z.string().regex(/^[1-9]\d{0,15}$/, 'a cursor from nextCursor').transform(Number).optional(),
});

const cancelBody = z.strictObject({ reason: z.string().max(10_000).nullable().optional() });
const messageBody = z.strictObject({ topic: z.string(), payload: z.unknown(), idempotencyKey: z.string().optional() });

/** The longest `wait` of `GET /api/jobs/:id/result`, ms: a long-poll answers 202 after it, and the client asks again. */
export const MAX_RESULT_WAIT_MS = 60_000;

/** `?wait=`: `<n>ms`, `<n>s` or plain ms, 0..MAX_RESULT_WAIT_MS, as ms. */
const resultQuery = z.strictObject({
  wait: z.string().regex(/^\d{1,8}(ms|s)?$/, 'a duration such as 30s, 500ms or 2000 (ms)')
    .transform((t) => (t.endsWith('ms') ? Number(t.slice(0, -2)) : t.endsWith('s') ? Number(t.slice(0, -1)) * 1000 : Number(t)))
    .pipe(z.number().max(MAX_RESULT_WAIT_MS, `at most ${MAX_RESULT_WAIT_MS / 1000}s`)).optional(),
});
const retryBody = z.strictObject({ fresh: z.boolean().optional() });

/** `:id` → a positive integer. @throws ValidationError */
export function jobId(text: string): number {
  if (!/^[1-9]\d{0,15}$/.test(text) || !Number.isSafeInteger(Number(text))) throw new ValidationError(`job id must be a positive integer, not ${JSON.stringify(text.slice(0, 40))}`);
  return Number(text);
}

/**
 * /api/jobs: enqueue, list (JobSummary items: values as bounded previews), get (the job
 * with its timeline; values over 64 KiB as previews, see jobDetailJson), one value whole as
 * raw JSON (`/:id/payload`, `/:id/result`, `/:id/checkpoint`; the result long-polls with
 * `?wait=30s`), the step log (`/:id/steps`), messages to the job (`POST /:id/messages`), cancel,
 * retry (body `{ fresh }`), promote. A list page or job answer over `responseLimit` bytes is refused (413
 * response_too_large); a download is one value, at most the payload limit. An enqueue whose request carries a W3C `traceparent` (and `tracestate`) continues that trace: its `enqueue` span, and so the job's runs, are in it.
 */
export function jobRoutes(baton: Baton, options: { tasks: Map<string, AnyTask> | undefined; bodyLimit: number; responseLimit: number }): Hono {
  const app = new Hono();
  const now = () => baton.clock.now();

  app.post('/', async (c) => {
    const { task, payload, options: o = {} } = parseInput(enqueueBody, await readJson(c, options.bodyLimit), 'invalid enqueue request');
    const enqueueOptions = o as EnqueueOptions;
    const known = options.tasks?.get(task);
    if (options.tasks && !known) throw new NotFoundError(`unknown task "${task}": this server knows ${[...options.tasks.keys()].map((n) => `"${n}"`).join(', ') || 'no tasks'}`);
    const tracing = await loadTracing();
    try {
      const job = await tracing.incoming(c.req.header(), () => (known ? baton.enqueue(known, payload as never, enqueueOptions) : baton.enqueue(task, payload, enqueueOptions)));
      return c.json(jobJson(job, now()), 201);
    } catch (error) {
      // The client names fields from the argument it checked; the body has them under that key.
      throw error instanceof ValidationError && error.subject ? withPathPrefix(error, [error.subject]) : error;
    }
  });

  app.get('/', async (c) => {
    const { cursor, limit = 50, ...filter } = parseInput(listQuery, c.req.query(), 'invalid job list query');
    const items = await baton.listJobs({ ...filter, limit, ...(cursor === undefined ? {} : { before: cursor }) });
    const last = items.at(-1);
    const page = JSON.stringify({ items: items.map((job) => jobJson(job, now())), nextCursor: items.length === limit && last ? String(last.id) : null });
    return boundedJson(c, page, options.responseLimit, `this page of ${items.length} jobs`, 'ask a smaller limit');
  });

  // The detail adds the job's whole story (TimelineEntry[], oldest first); lists leave it out.
  app.get('/:id', async (c) => {
    const { job, timeline } = await baton.getJobTimeline(jobId(c.req.param('id')));
    const hint = `its errors and timeline are too long to answer whole; its values download from /api/jobs/${job.id}/payload, /result and /checkpoint`;
    return boundedJson(c, JSON.stringify(jobDetailJson(job, timeline, now())), options.responseLimit, `job ${job.id}`, hint);
  });

  // One value of the job as raw JSON, whole, as a download (the dashboard links a large one
  // instead of showing it): `null` when the job has none (no result yet, no checkpoint). Its
  // size is the value's: at most the payload limit of the process that stored it (1 MiB by
  // default), so it is not held to responseLimit: a larger payload limit still downloads.
  // With ?wait=30s the result long-polls (baton.waitForResult): 200 with the result once
  // completed, 409 when it failed or was cancelled, 202 with the job when still unfinished.
  app.get('/:id/result', async (c, next) => {
    const { wait } = parseInput(resultQuery, c.req.query(), 'invalid result query');
    if (wait === undefined) return next();
    const id = jobId(c.req.param('id'));
    try {
      const result = wait === 0 ? await finishedResult(baton, id) : await baton.waitForResult(id, { timeout: wait, signal: c.req.raw.signal });
      return c.body(JSON.stringify(result ?? null), 200, { 'Content-Type': 'application/json' });
    } catch (error) {
      if (error instanceof WaitTimeoutError) return c.json(jobJson(error.job ?? (await baton.getJob(id)), now()), 202);
      throw error;
    }
  });

  // Results are whole: the answer is held to responseLimit, as a job's is.
  app.get('/:id/steps', async (c) => {
    const id = jobId(c.req.param('id'));
    const steps = await baton.getJobSteps(id);
    return boundedJson(c, JSON.stringify({ steps }), options.responseLimit, `the ${steps.length} steps of job ${id}`, 'their results are too large to answer together');
  });

  app.post('/:id/messages', async (c) => {
    const id = jobId(c.req.param('id'));
    const { topic, payload, idempotencyKey } = parseInput(messageBody, await readJson(c, options.bodyLimit), 'invalid message');
    const sent = await baton.send(id, topic, payload as never, idempotencyKey === undefined ? {} : { idempotencyKey });
    return c.json(sent, sent.created ? 201 : 200);
  });

  for (const field of JOB_VALUES) {
    app.get(`/:id/${field}`, async (c) => {
      const id = jobId(c.req.param('id'));
      const job = await baton.getJob(id);
      c.header('Content-Disposition', `attachment; filename="job-${id}-${field}.json"`);
      return c.body(JSON.stringify(job[field] ?? null), 200, { 'Content-Type': 'application/json' });
    });
  }

  app.post('/:id/cancel', async (c) => {
    const id = jobId(c.req.param('id'));
    const { reason } = parseInput(cancelBody, await readJson(c, options.bodyLimit), 'invalid cancel request');
    const result = await baton.cancel(id, reason ?? undefined, { by: 'http' });
    if (result.outcome === 'unchanged') throw new ConflictError(`job ${id} is already ${result.job.state}; nothing to cancel`, result.job.state);
    return c.json({ outcome: result.outcome, job: jobJson(result.job, now()) });
  });

  app.post('/:id/retry', async (c) => {
    const id = jobId(c.req.param('id'));
    const { fresh } = parseInput(retryBody, await readJson(c, options.bodyLimit), 'invalid retry request');
    return c.json(jobJson(await baton.retry(id, fresh === undefined ? {} : { fresh }), now()));
  });

  app.post('/:id/promote', async (c) => {
    const id = jobId(c.req.param('id'));
    await readJson(c, options.bodyLimit);
    const result = await baton.promote(id);
    if (result.outcome === 'unchanged') throw new ConflictError(notPromotedMessage(result.job, now()), result.job.state);
    return c.json({ outcome: result.outcome, job: jobJson(result.job, now()) });
  });

  return app;
}

/** `?wait=0`: the result of a finished job, or a WaitTimeoutError for an unfinished one (202). */
async function finishedResult(baton: Baton, id: number): Promise<unknown> {
  const job = await baton.getJob(id);
  if (job.state === 'queued' || job.state === 'running') throw new WaitTimeoutError(job, 0);
  return baton.waitForResult(id);
}
