import type { Migration } from '../../migrate.js';

/**
 * Trace context (issue 13): `jobs.trace_context` holds the W3C trace context of the
 * enqueue that made the job (`{"traceparent": …, "tracestate": …}` as JSON text), so a
 * worker in another process starts its run span in the same trace (observe/tracing.ts).
 * NULL when nothing was being traced at the enqueue.
 */
export const migration: Migration = {
  version: 17,
  name: 'trace-context',
  sql: `
    ALTER TABLE jobs ADD COLUMN trace_context TEXT;
  `,
};
