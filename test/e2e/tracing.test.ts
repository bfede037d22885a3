/**
 * OpenTelemetry across processes, on both drivers (a SQLite file both processes open,
 * or a PostgreSQL schema): `POST /api/jobs` with a W3C `traceparent`, served here, and
 * the job run by a worker in another process (test/fixtures/traced-worker.ts, which
 * reports its finished spans) make one trace: request → `enqueue traced` (PRODUCER,
 * here) → `process traced` (CONSUMER, there) → the handler's own span. The test process
 * registers no propagator, so Baton's W3C fallback stores the context; the worker
 * process registers one globally, so the application's propagator reads it.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { SpanKind } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { Job } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { spawnTs, type ChildMessage } from '../helpers/child.js';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { recordSpans, spanJson, type SpanJson } from '../helpers/spans.js';

const exporter = recordSpans();

const fixture = fileURLToPath(new URL('../fixtures/traced-worker.ts', import.meta.url));
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The span named `name` the worker process reported (waits for it). */
async function reported(worker: ReturnType<typeof spawnTs>, name: string): Promise<SpanJson> {
  const line = await worker.waitFor((m: ChildMessage) => m.type === 'span' && m.name === name, `span "${name}"`);
  return line as unknown as SpanJson;
}

describe(`tracing across processes (${testDriver})`, () => {
  it('one trace from POST /api/jobs (traceparent) through the enqueue span to the run span and the handler\'s span in a worker process', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const worker = spawnTs(fixture, [JSON.stringify({ database: db.url })]);
    await worker.waitFor((m) => m.type === 'ready', 'the traced worker to start');

    const traceId = hex(16);
    const callerSpanId = hex(8);
    const response = await createHttpApp(baton).fetch(
      new Request('http://localhost/api/jobs', {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpanId}-01` },
        body: JSON.stringify({ task: 'traced', payload: {} }),
      }),
    );
    expect(response.status).toBe(201);
    const job = (await response.json()) as Job;

    // Here: the enqueue span, a child of the request's caller.
    const enqueue = exporter.getFinishedSpans().map(spanJson).find((s) => s.name === 'enqueue traced');
    expect(enqueue, 'the enqueue span').toBeDefined();
    expect(enqueue).toMatchObject({ kind: SpanKind.PRODUCER, traceId, parentSpanId: callerSpanId });
    expect(enqueue!.attributes).toMatchObject({
      'messaging.system': 'baton',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'default',
      'messaging.message.id': String(job.id),
      'baton.task': 'traced',
    });
    // The job stores the enqueue span's context: that is all that crosses to the worker.
    expect(job.traceContext).toEqual({ traceparent: `00-${traceId}-${enqueue!.spanId}-01` });

    // There: the run span, the enqueue span's child, and the handler's span, the run span's child.
    const run = await reported(worker, 'process traced');
    const work = await reported(worker, 'handler work');
    expect(run).toMatchObject({ kind: SpanKind.CONSUMER, traceId, parentSpanId: enqueue!.spanId });
    expect(run.attributes).toMatchObject({
      'messaging.system': 'baton',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'default',
      'messaging.message.id': String(job.id),
      'baton.task': 'traced',
      'baton.attempt': 1,
      'baton.outcome': 'completed',
    });
    expect(typeof run.attributes['baton.worker.id']).toBe('string');
    expect(work).toMatchObject({ traceId, parentSpanId: run.spanId });
    // The handler saw its own span as the active one.
    const done = await baton.getJob(job.id);
    expect(done.result).toEqual({ traceparent: `00-${traceId}-${work.spanId}-01` });
  });
});
