import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

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
