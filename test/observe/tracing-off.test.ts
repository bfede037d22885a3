/**
 * Tracing off: `@opentelemetry/api` is installed (as in most applications) but no
 * tracer provider is registered. Baton makes no span; a job stores no trace context
 * unless its enqueue came with one (an incoming `traceparent`), which it then passes
 * on unchanged; jobs run as before. Only a context manager is registered in this file
 * (each test file runs in a process of its own): an incoming context needs one to
 * reach the enqueue, with or without a provider.
 */
import { randomBytes } from 'node:crypto';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTask, type Job } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

beforeAll(() => void context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()));
afterAll(() => context.disable());

describe('tracing with no tracer provider registered', () => {
  it('an enqueue stores no trace context, and the job runs to completion as before', async () => {
    const baton = await openBaton();
    const task = defineTask('plain', { handler: async (payload: { n: number }) => payload.n + 1 });
    const worker = baton.worker({ tasks: [task] });
    await worker.start();
    const job = await baton.enqueue(task, { n: 1 });
    expect(job.traceContext).toBeNull();
    await waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'completed', result: 2, traceContext: null });
  });

  it('POST /api/jobs with a traceparent stores exactly that context (passed on for a traced worker), nothing else', async () => {
    const baton = await openBaton();
    const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    const response = await createHttpApp(baton).fetch(
      new Request('http://localhost/api/jobs', { method: 'POST', headers: { 'content-type': 'application/json', traceparent }, body: JSON.stringify({ task: 'mail' }) }),
    );
    expect(response.status).toBe(201);
    const job = (await response.json()) as Job;
    expect(job.traceContext).toEqual({ traceparent });
    expect((await baton.getJob(job.id)).traceContext).toEqual({ traceparent });
  });
});
