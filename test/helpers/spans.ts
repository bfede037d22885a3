import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll } from 'vitest';

/**
 * Registers, for the calling test file, a global tracer provider that keeps every
 * finished span in memory and an AsyncLocalStorage context manager; both are removed
 * after the file's tests.
 * @returns the exporter holding the finished spans
 */
export function recordSpans(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  });
  afterAll(() => {
    trace.disable();
    context.disable();
  });
  return exporter;
}

/** A finished span as plain JSON, the same in the test process and in a worker process that reports it on stdout. */
export interface SpanJson {
  name: string;
  /** SpanKind: 0 internal, 1 server, 2 client, 3 producer, 4 consumer. */
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  /** SpanStatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
}

/** `span` as {@link SpanJson}. */
export function spanJson(span: ReadableSpan): SpanJson {
  return {
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    attributes: { ...span.attributes },
    events: span.events.map((e) => ({ name: e.name, attributes: { ...(e.attributes ?? {}) } })),
    status: { ...span.status },
  };
}
