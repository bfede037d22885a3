/**
 * The OpenAPI 3.1 document of the HTTP API (`GET /api/openapi.json`). Kept by
 * hand next to the routes; test/http/api.test.ts checks that every route is in it.
 */
const error = { $ref: '#/components/responses/Error' };
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const ok = (description: string, schema: object = { type: 'object' }) => ({ description, ...json(schema) });
const errors = { '400': error, '401': error, '403': error, '404': error, '409': error, '413': error, '415': error };
/** What a DELETE of a queue setting answers. */
const clearOverrideResult = { type: 'object', properties: { queue: { type: 'string' }, setting: { enum: ['concurrency', 'rateLimit', 'keyRateLimit'] }, changed: { type: 'boolean' } } };
const nameParam = { name: 'name', in: 'path', required: true, schema: { type: 'string' } };
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } };
const emptyBody = { required: false, ...json({ type: 'object' }) };

function admin(noun: 'schedules' | 'services'): Record<string, object> {
  const paths: Record<string, object> = {
    [`/api/${noun}`]: { get: { summary: `List ${noun}`, responses: { '200': ok(noun), ...errors } } },
  };
  for (const action of ['pause', 'resume', 'trigger']) {
    paths[`/api/${noun}/{name}/${action}`] = {
      post: { summary: `${action} a ${noun.slice(0, -1)} (admin)`, parameters: [nameParam], requestBody: emptyBody, responses: { '200': ok(action), ...errors } },
    };
  }
  return paths;
}

/** The body of a bulk request: filter fields (all must match) and options. */
function bulkRequest(states: string, created: boolean, reason: boolean, fresh = false): object {
  // format date-time is RFC 3339; a bare date (2030-01-31, midnight UTC) is accepted too, hence no format.
  const time = (what: string) => ({ type: 'string', description: `${what}: ISO 8601, a date-time with Z or an offset, or a date (midnight UTC); 1970..9999` });
  return {
    required: true,
    ...json({
      type: 'object',
      additionalProperties: false,
      description: 'Without any filter field, refused (400) unless all is true',
      properties: {
        state: { type: 'string', description: `one of ${states} (default: all of them)` },
        queue: { type: 'string' },
        task: { type: 'string' },
        ...(created ? { createdBefore: time('created strictly before') } : {}),
        finishedBefore: time('finished strictly before'),
        all: { type: 'boolean', description: 'allow an empty filter' },
        dryRun: { type: 'boolean', description: 'count the matching jobs, change nothing' },
        batchSize: { type: 'integer', minimum: 1, maximum: 10000, default: 1000 },
        limit: { type: 'integer', minimum: 1, description: 'at most this many jobs, lowest ids first (purge: oldest finished first); with dryRun, caps the count' },
        ...(reason ? { reason: { type: 'string', description: 'CancelledError.reason for the handlers' } } : {}),
        ...(fresh ? { fresh: { type: 'boolean', default: false, description: 'start each job from scratch: checkpoint and progress cleared (default: resume from the checkpoint)' } } : {}),
      },
    }),
  };
}

/** The answer of a bulk request: `matched` plus what was done (all 0 with dryRun). */
const bulkResult = (done: Record<string, object>) => ({ type: 'object', properties: { dryRun: { type: 'boolean' }, matched: { type: 'integer' }, ...done } });

export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'Baton HTTP API', version: '0.1.0', description: 'Durable background jobs: enqueue, inspect, cancel, retry, promote. Bearer tokens: read (GET) and admin (everything). POST requests (and any request with a body) need Content-Type: application/json; a path whose percent-encoding is not UTF-8 is refused (400).' },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    responses: {
      Error: {
        description: 'An error: validation/bad JSON/a query parameter given twice 400, no or bad token 401, read token on a write or a cross-site request (Sec-Fetch-Site other than same-origin or none, or a foreign Origin) 403, unknown id or task 404, wrong state 409, body too large or an answer over responseLimit (response_too_large) 413, wrong content type 415, too many event streams (busy) 503',
        ...json({ type: 'object', properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' }, issues: { type: 'array' }, state: { type: 'string' } } } } }),
      },
    },
    schemas: {
      Readiness: {
        type: 'object',
        required: ['ready', 'failed', 'checks'],
        properties: {
          ready: { type: 'boolean' },
          failed: { type: 'array', items: { enum: ['database', 'schema', 'worker'] } },
          checks: {
            type: 'object',
            description: 'worker is present when the process runs workers; schema is not checked (ok false, not in failed) when the database did not answer',
            properties: Object.fromEntries(['database', 'schema', 'worker'].map((name) => [name, { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' }, reason: { type: 'string' } } }])),
          },
        },
      },
      TimelineEntry: {
        type: 'object',
        required: ['type', 'at', 'attempt', 'worker', 'summary'],
        description: 'One event of a job\'s life. Per type: enqueued (schedule, scheduledFor); started; released (runAt: the job\'s own, kept: due at once in its place in line; at shutdown, attempt not counted); snoozed (runAt, delayMs, rateLimited; not counted); rescued (outcome queued|failed|cancelled: the lease expired); retryScheduled (runAt, error); cancelRequested (by: who asked, e.g. http, cli, api, schedule:<name>, key:<strategy>; reason); completed; failed (error); cancelled (reason); promoted (runAt: when it was due; made due at once by hand); retried (run again by hand; fresh: checkpoint and progress cleared)',
        properties: {
          type: { enum: ['enqueued', 'started', 'released', 'snoozed', 'rescued', 'retryScheduled', 'cancelRequested', 'completed', 'failed', 'cancelled', 'promoted', 'retried'] },
          at: { type: 'string', format: 'date-time' },
          attempt: { type: ['integer', 'null'], description: 'the attempt it is about; null outside an attempt' },
          worker: { type: ['string', 'null'], description: "that attempt's worker id" },
          summary: { type: 'string', description: 'one line for people' },
          runAt: { type: 'string', format: 'date-time' }, delayMs: { type: 'integer' }, rateLimited: { type: 'boolean' },
          outcome: { enum: ['queued', 'failed', 'cancelled'] }, error: { type: ['string', 'null'] }, by: { type: ['string', 'null'] }, reason: { type: ['string', 'null'] },
          schedule: { type: ['string', 'null'] }, scheduledFor: { type: ['string', 'null'] }, fresh: { type: 'boolean' },
        },
      },
      Preview: {
        type: 'object',
        required: ['text', 'bytes', 'truncated'],
        description: 'The start of a value\'s text: its first 200 characters (a JSON value: its JSON text; an error: its message), its whole size in UTF-8 bytes, and whether text is only the start',
        properties: { text: { type: 'string' }, bytes: { type: 'integer' }, truncated: { type: 'boolean' } },
      },
      JobSummary: {
        type: 'object',
        description: 'A job as lists show it: the fields of Job but payload, result, checkpoint and errors, which come as previews (GET /api/jobs/{id} has them whole)',
        properties: {
          id: { type: 'integer' }, queue: { type: 'string' }, task: { type: 'string' }, state: { enum: ['queued', 'running', 'completed', 'failed', 'cancelled'] },
          view: { enum: ['queued', 'delayed', 'retrying', 'waiting', 'running', 'cancelling', 'completed', 'failed', 'cancelled'] },
          payloadPreview: ref('Preview'), resultPreview: { oneOf: [ref('Preview'), { type: 'null' }] }, checkpointPreview: { oneOf: [ref('Preview'), { type: 'null' }] },
          errorCount: { type: 'integer' },
          lastError: { oneOf: [{ type: 'object', properties: { attempt: { type: 'integer' }, time: { type: 'string' }, message: ref('Preview') } }, { type: 'null' }] },
        },
        additionalProperties: true,
      },
      PauseResult: { type: 'object', properties: { queue: { type: 'string' }, paused: { type: 'boolean' }, changed: { type: 'boolean', description: 'false when it already was so' } } },
      Job: {
        type: 'object',
        properties: {
          id: { type: 'integer' }, queue: { type: 'string' }, task: { type: 'string' }, payload: {}, state: { enum: ['queued', 'running', 'completed', 'failed', 'cancelled'] },
          view: { enum: ['queued', 'delayed', 'retrying', 'waiting', 'running', 'cancelling', 'completed', 'failed', 'cancelled'] },
          priority: { type: 'integer' }, runAt: { type: 'string', format: 'date-time' }, attempt: { type: 'integer' }, maxAttempts: { type: 'integer' },
          timeoutMs: { type: ['integer', 'null'] }, key: { type: ['string', 'null'] }, progress: { type: ['object', 'null'] }, checkpoint: {}, result: {},
          errors: { type: 'array', items: { type: 'object', properties: { attempt: { type: 'integer' }, time: { type: 'string' }, message: { type: 'string' }, stack: { type: ['string', 'null'] } } } },
          cancelRequestedAt: { type: ['string', 'null'] }, cancelReason: { type: ['string', 'null'] }, createdAt: { type: 'string' }, startedAt: { type: ['string', 'null'] }, finishedAt: { type: ['string', 'null'] },
          leaseOwner: { type: ['string', 'null'] }, leaseExpiresAt: { type: ['string', 'null'] }, scheduleName: { type: ['string', 'null'] }, scheduledFor: { type: ['string', 'null'] },
          concurrencyKey: { type: ['string', 'null'] }, concurrencyLimit: { type: ['integer', 'null'] },
          traceContext: { type: ['object', 'null'], additionalProperties: { type: 'string' }, description: 'the W3C trace context (traceparent, tracestate) of the enqueue, when it was traced' },
          wait: { type: ['object', 'null'], properties: { kind: { enum: ['sleep', 'message', 'children'] }, until: { type: 'string', format: 'date-time' }, topic: { type: 'string' }, ids: { type: 'array', items: { type: 'integer' } } }, description: 'what a waiting job waits for (a suspended ctx.sleep, ctx.receive or ctx.waitForChildren); null otherwise' },
          parentId: { type: ['integer', 'null'], description: 'the job whose run enqueued this one (ctx.enqueueChild)' },
        },
      },
    },
  },
  security: [{ bearer: [] }, {}],
  paths: {
    '/healthz': { get: { summary: 'Liveness (no token needed): 200 while the process and its event loop answer; no database call', security: [], responses: { '200': ok('alive', { type: 'object', properties: { ok: { const: true }, driver: { type: 'string' } } }) } } },
    '/readyz': {
      get: {
        summary: 'Readiness (no token needed): the database answers within the timeout (default 2000 ms), the schema is current, and every worker of the process is running (a stopping worker is not ready from the moment its stop begins)',
        security: [],
        responses: { '200': ok('ready', ref('Readiness')), '503': ok('not ready: failed names the checks that failed', ref('Readiness')) },
      },
    },
    '/api/openapi.json': { get: { summary: 'This document', responses: { '200': ok('OpenAPI 3.1') } } },
    '/api/jobs': {
      post: {
        summary: 'Enqueue a job (admin)',
        description: 'With a W3C traceparent header (and tracestate), the enqueue span and the runs of the job continue that trace (OpenTelemetry).',
        requestBody: { required: true, ...json({ type: 'object', required: ['task'], additionalProperties: false, properties: { task: { type: 'string' }, payload: {}, options: { type: 'object', additionalProperties: false, properties: { queue: { type: 'string', minLength: 1, maxLength: 200, description: 'no NUL or lone UTF-16 surrogate' }, priority: { type: 'integer', minimum: -1000000, maximum: 1000000 }, runAt: { type: 'string', format: 'date-time', description: 'within 1970-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z; with Z or an offset, or a bare date (midnight UTC); a date that does not exist (2024-02-30) is refused' }, delay: { type: 'integer', minimum: 0, description: 'ms from now; now + delay must not pass 9999-12-31T23:59:59.999Z' }, maxAttempts: { type: 'integer', minimum: 1, maximum: 1000 }, timeout: { type: 'integer', minimum: 1, maximum: 2147483647 }, key: { type: 'string', minLength: 1, maxLength: 500 }, concurrencyKey: { type: 'string', minLength: 1, maxLength: 500, description: "the queue's jobs with one key take turns and share the task's per-key limit" } } } } }) },
        responses: { '201': ok('the job', ref('Job')), ...errors },
      },
      get: {
        summary: 'List jobs, newest first: payload, result, checkpoint and the last error as bounded previews (JobSummary)',
        parameters: [
          { name: 'state', in: 'query', schema: { enum: ['queued', 'running', 'completed', 'failed', 'cancelled'] } },
          { name: 'queue', in: 'query', schema: { type: 'string' } },
          { name: 'task', in: 'query', schema: { type: 'string' } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 } },
          { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'nextCursor of the previous page' },
        ],
        responses: { '200': ok('a page', { type: 'object', properties: { items: { type: 'array', items: ref('JobSummary') }, nextCursor: { type: ['string', 'null'] } } }), ...errors },
      },
    },
    '/api/jobs/{id}': {
      get: {
        summary: 'One job, with its timeline: its whole story from stored data, oldest first. A payload, result or checkpoint over 64 KiB is null here and described by its preview (payloadPreview, resultPreview, checkpointPreview: null when the value is there whole); the download routes have it whole',
        parameters: [idParam],
        responses: {
          '200': ok('the job and its timeline', {
            allOf: [
              ref('Job'),
              {
                type: 'object',
                required: ['timeline', 'payloadPreview', 'resultPreview', 'checkpointPreview'],
                properties: {
                  timeline: { type: 'array', items: ref('TimelineEntry') },
                  payloadPreview: { oneOf: [ref('Preview'), { type: 'null' }] },
                  resultPreview: { oneOf: [ref('Preview'), { type: 'null' }] },
                  checkpointPreview: { oneOf: [ref('Preview'), { type: 'null' }] },
                },
              },
            ],
          }),
          ...errors,
        },
      },
      delete: { summary: 'Delete a job that is not running (admin; no body): running → 409', parameters: [idParam], responses: { '200': ok('the id and the state it had', { type: 'object', properties: { id: { type: 'integer' }, state: { type: 'string' } } }), ...errors } },
    },
    ...Object.fromEntries(['payload', 'checkpoint'].map((value) => [`/api/jobs/{id}/${value}`, {
      get: { summary: `The job's ${value}, whole, as raw JSON (a download: Content-Disposition attachment); null when it has none`, parameters: [idParam], responses: { '200': ok(`the ${value}`, {}), ...errors } },
    }])),
    '/api/jobs/{id}/result': {
      get: {
        summary: "The job's result, whole, as raw JSON (a download; null when it has none). With wait (30s, 500ms or ms; at most 60s) it long-polls (baton.waitForResult): 200 with the result once completed, 409 (job_failed, job_cancelled) when it ended otherwise, 202 with the job when still unfinished after the wait (ask again)",
        parameters: [idParam, { name: 'wait', in: 'query', required: false, schema: { type: 'string', pattern: '^\\d{1,8}(ms|s)?$' } }],
        responses: { '200': ok('the result', {}), '202': ok('not finished yet', ref('Job')), ...errors },
      },
    },
    '/api/jobs/{id}/steps': {
      get: {
        summary: "The job's step log (ctx.step, durable waits, children), in the order its steps first ran",
        parameters: [idParam],
        responses: {
          '200': ok('the steps', { type: 'object', properties: { steps: { type: 'array', items: { type: 'object', properties: {
            name: { type: 'string' }, seq: { type: 'integer' }, state: { enum: ['completed', 'failed', 'waiting'] }, attempt: { type: 'integer' }, tries: { type: 'integer' },
            startedAt: { type: 'string', format: 'date-time' }, finishedAt: { type: ['string', 'null'] }, durationMs: { type: ['integer', 'null'] }, result: {},
            resultBytes: { type: ['integer', 'null'] }, error: { type: ['string', 'null'] }, until: { type: ['string', 'null'], description: 'a waiting receive\'s deadline' },
          } } } } }),
          ...errors,
        },
      },
    },
    '/api/jobs/{id}/messages': {
      post: {
        summary: "Send a message to the job's ctx.receive(topic) (admin): stored, delivered exactly once, kept when sent before the receive; a job waiting on the topic is woken. A finished job → 409; an idempotencyKey used before for this job and topic → 200 with the first message",
        parameters: [idParam],
        requestBody: { required: true, ...json({ type: 'object', additionalProperties: false, required: ['topic', 'payload'], properties: { topic: { type: 'string' }, payload: {}, idempotencyKey: { type: 'string' } } }) },
        responses: {
          '201': ok('stored', { type: 'object', properties: { jobId: { type: 'integer' }, messageId: { type: 'integer' }, created: { const: true } } }),
          '200': ok('already sent with this idempotency key', { type: 'object', properties: { jobId: { type: 'integer' }, messageId: { type: 'integer' }, created: { const: false } } }),
          ...errors,
        },
      },
    },
    '/api/jobs/{id}/cancel': {
      post: {
        summary: 'Cancel a job (admin): queued → cancelled; running → its worker aborts it; terminal → 409',
        parameters: [idParam],
        requestBody: { required: false, ...json({ type: 'object', properties: { reason: { type: 'string' } } }) },
        responses: { '200': ok('outcome', { type: 'object', properties: { outcome: { enum: ['cancelled', 'requested'] }, job: ref('Job') } }), ...errors },
      },
    },
    '/api/jobs/{id}/retry': {
      post: {
        summary: 'Run a failed or cancelled job again (admin): attempts start over, errors kept; it resumes from its checkpoint unless fresh is true (checkpoint and progress cleared). Queued, running or completed → 409',
        parameters: [idParam],
        requestBody: { required: false, ...json({ type: 'object', additionalProperties: false, properties: { fresh: { type: 'boolean', default: false } } }) },
        responses: { '200': ok('the job', ref('Job')), ...errors },
      },
    },
    '/api/jobs/{id}/promote': {
      post: {
        summary: 'Run a waiting job now (admin): a queued job whose runAt is in the future (delayed, retrying, snoozed) becomes due now and idle workers claim it at once. Any other job (queued and already due, running, finished) → 409 naming its state',
        parameters: [idParam],
        requestBody: emptyBody,
        responses: { '200': ok('outcome', { type: 'object', properties: { outcome: { const: 'promoted' }, job: ref('Job') } }), ...errors },
      },
    },
    '/api/queues': { get: { summary: 'Counts by state, paused state (paused, pausedAt), concurrency limit (concurrency, null when none), rate limits with their window (rateLimit, keyRateLimit: { limit, periodMs, used, nextAt }, null when none), where each setting in force comes from (sources: { concurrency, rateLimit, keyRateLimit }: "code" = its defineQueue declaration, "override" = set by CLI, dashboard or this API, null = none), the declared settings (declared: { concurrency, rateLimit, keyRateLimit }, null when not declared in code) latency (latencyMs: age of the oldest due queued job, 0 when none), live workers serving it (workers), tasks with due jobs no live worker of the queue serves (unservedTasks: [{ task, jobs }]) and throughput per minute (last 15 minutes) of each queue', responses: { '200': ok('queues'), ...errors } } },
    '/api/queues/keys': {
      get: {
        summary: 'The busiest concurrency keys with live (queued or running) jobs, most running first, then most queued; limit: the most of a key running at once fleet-wide, null when none (turns only). A queue Baton does not know → 404',
        parameters: [
          { name: 'queue', in: 'query', schema: { type: 'string', minLength: 1, maxLength: 200 }, description: 'only this queue (default: every queue)' },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 20 } },
        ],
        responses: {
          '200': ok('the keys', { type: 'object', properties: { keys: { type: 'array', items: { type: 'object', properties: { queue: { type: 'string' }, key: { type: 'string' }, queued: { type: 'integer' }, running: { type: 'integer' }, limit: { type: ['integer', 'null'] } } } } } }),
          ...errors,
        },
      },
    },
    '/api/workers': { get: { summary: 'Live worker processes (any host)', responses: { '200': ok('workers'), ...errors } } },
    '/api/queues/{name}/pause': {
      post: {
        summary: 'Pause a queue for every worker (admin): claims skip it, running jobs go on; stored. An unknown queue (no job in any state, no live worker serving it, never paused) → 404 unless force',
        parameters: [nameParam],
        requestBody: { required: false, ...json({ type: 'object', additionalProperties: false, properties: { force: { type: 'boolean', default: false } } }) },
        responses: { '200': ok('the queue', ref('PauseResult')), ...errors },
      },
    },
    '/api/queues/{name}/resume': {
      post: { summary: 'Resume a paused queue (admin); its workers are woken at once. Unknown queue → 404', parameters: [nameParam], requestBody: emptyBody, responses: { '200': ok('the queue', ref('PauseResult')), ...errors } },
    },
    '/api/queues/{name}/concurrency': {
      put: {
        summary: 'Set (1..1000000) or remove (null) the most jobs of a queue running at once across the fleet (admin); stored, exact; an override of the limit its code declares until DELETE. Unknown queue → 404 unless force',
        parameters: [nameParam],
        requestBody: { required: true, ...json({ type: 'object', additionalProperties: false, required: ['concurrency'], properties: { concurrency: { type: ['integer', 'null'], minimum: 1, maximum: 1000000 }, force: { type: 'boolean', default: false } } }) },
        responses: { '200': ok('the queue', { type: 'object', properties: { queue: { type: 'string' }, concurrency: { type: ['integer', 'null'] }, changed: { type: 'boolean' } } }), ...errors },
      },
      delete: {
        summary: 'Drop the override of the concurrency limit (admin): the limit the queue\'s code declares (defineQueue; none if it declares none) is in force again. changed false when it was not overridden. Unknown queue → 404',
        parameters: [nameParam],
        responses: { '200': ok('the queue', clearOverrideResult), ...errors },
      },
    },
    '/api/queues/{name}/rate-limit': {
      put: {
        summary: "Set or remove (rate null) the most jobs of a queue that may start in any sliding window of periodMs across the fleet (admin); perKey: each concurrency key's starts apart. Stored, exact; an override of the rate its code declares until DELETE. Unknown queue → 404 unless force",
        parameters: [nameParam],
        requestBody: { required: true, ...json({ type: 'object', additionalProperties: false, required: ['rate'], properties: { rate: { oneOf: [{ type: 'null' }, { type: 'object', additionalProperties: false, required: ['limit', 'periodMs'], properties: { limit: { type: 'integer', minimum: 1, maximum: 10000 }, periodMs: { type: 'integer', minimum: 1, maximum: 604800000 } } }] }, perKey: { type: 'boolean', default: false }, force: { type: 'boolean', default: false } } }) },
        responses: { '200': ok('the queue', { type: 'object', properties: { queue: { type: 'string' }, perKey: { type: 'boolean' }, rate: { type: ['object', 'null'] }, changed: { type: 'boolean' } } }), ...errors },
      },
      delete: {
        summary: "Drop the override of the queue's rate limit, or with perKey=true of its per-key rate (admin): the rate its code declares (defineQueue; none if it declares none) is in force again. Unknown queue → 404",
        parameters: [nameParam, { name: 'perKey', in: 'query', schema: { type: 'boolean', default: false } }],
        responses: { '200': ok('the queue', clearOverrideResult), ...errors },
      },
    },
    '/api/jobs/retry-many': {
      post: { summary: 'Retry failed and cancelled jobs matching the filter, in batches (admin); dryRun counts only', requestBody: bulkRequest('failed or cancelled', true, false, true), responses: { '200': ok('counts', bulkResult({ retried: { type: 'integer' } })), ...errors } },
    },
    '/api/jobs/cancel-many': {
      post: { summary: 'Cancel queued and running jobs matching the filter, in batches (admin): queued → cancelled, running → cancel request (its worker aborts it); dryRun counts only', requestBody: bulkRequest('queued or running', true, true), responses: { '200': ok('counts', bulkResult({ cancelled: { type: 'integer' }, requested: { type: 'integer' } })), ...errors } },
    },
    '/api/jobs/purge': {
      post: { summary: 'Delete finished jobs matching the filter, oldest finished first, in batches (admin); dryRun counts only', requestBody: bulkRequest('completed, failed or cancelled', false, false), responses: { '200': ok('counts', bulkResult({ deleted: { type: 'integer' } })), ...errors } },
    },
    ...admin('schedules'),
    ...admin('services'),
    '/api/events': {
      get: {
        summary: 'Server-Sent Events: `change` events with counts and running jobs; with `job`, that one job\'s changes; `access_token` query parameter accepted',
        description: [
          'Without `job`: an event `change` with `{ counts, running: [{ id, task, queue, progress, state }], at }` each time they differ.',
          'With `job=ID`: follows that job, woken by the store\'s change notifications and this server\'s writes, read at least every events interval (500 ms by default), sent only when the job changed.',
          'Event `job`: `{ job, timeline?, at }`: the first has every field of `GET /api/jobs/{id}` except `payload` and `payloadPreview` (it never changes), and the whole `timeline`;',
          'each later one only the fields that changed (`id` always), and the whole `timeline` only when it changed.',
          'Event `end`: `{ reason: "terminal", state, at }` after the job completed, failed or was cancelled, or `{ reason: "deleted", at }`; the server then closes the stream (an EventSource should close() on it, or it reconnects).',
          'Unknown job: 404 before the stream starts; an id that is not a positive integer: 400. A `: heartbeat` comment comes after 15 s of silence.',
          'At most eventsMaxClients streams (100 by default, both kinds) are open at once: one more is answered 503 (code busy). The counts are read once per interval for every client together.',
        ].join(' '),
        parameters: [{ name: 'job', in: 'query', required: false, schema: { type: 'integer', minimum: 1 }, description: 'follow this job instead of the queue counts' }],
        responses: { '200': { description: 'text/event-stream', content: { 'text/event-stream': {} } }, ...errors, '503': error },
      },
    },
    '/metrics': { get: { summary: 'Prometheus metrics', responses: { '200': { description: 'text format', content: { 'text/plain': {} } }, ...errors } } },
  },
} as const;
