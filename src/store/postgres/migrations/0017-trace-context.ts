import type { Migration } from '../../migrate.js';

/**
 * Trace context (issue 13), as SQLite's migration 17: `trace_context` (json, the W3C
 * `traceparent`/`tracestate` of the enqueue, NULL when nothing was traced) in both job
 * tables, and the view `jobs_all` recreated over them.
 */
export const migration: Migration = {
  version: 17,
  name: 'trace-context',
  sql: `
    ALTER TABLE :schema.jobs ADD COLUMN trace_context json;
    ALTER TABLE :schema.jobs_finished ADD COLUMN trace_context json;
    CREATE OR REPLACE VIEW :schema.jobs_all AS SELECT * FROM :schema.jobs UNION ALL SELECT * FROM :schema.jobs_finished;
  `,
};
