import type { Attributes, Span, TextMapPropagator, Tracer } from '@opentelemetry/api';
import type * as OtelApi from '@opentelemetry/api';
import { isMissingPackage } from '../import-peer.js';
import type { ClaimedJob, Job } from '../job/types.js';
import type { NewJob, ScheduleRecord } from '../store/store.js';

/**
 * OpenTelemetry tracing through `@opentelemetry/api`, an optional peer dependency:
 * without it every method here does nothing. With it, spans go to whatever tracer
 * provider the application registered; with none registered the API's no-op tracer
 * answers, and no attribute is built (every span is checked with `isRecording()`).
 *
 * ```
 * POST /api/jobs (traceparent) ─► enqueue <task> (PRODUCER) ─► jobs.trace_context
 *                                                                   │ (another process)
 *                       process <task> (CONSUMER), one per attempt ◄┘ parent: the enqueue span
 *                            └─ the handler's own spans
 * schedule <name> (PRODUCER) ─► its jobs' trace_context;  service <name> (INTERNAL) around a run
 * ```
 * A run span is the enqueue span's child, not a link to it, so that one trace goes
 * from the request that enqueued a job to the handler that ran it, across processes,
 * with every attempt side by side under the enqueue.
 *
 * Attributes follow OpenTelemetry's messaging conventions: `messaging.system`
 * "baton", `messaging.operation.type` (send / process), `messaging.operation.name`,
 * `messaging.destination.name` (the queue), `messaging.message.id` (the job id,
 * as text), `messaging.batch.message_count`; Baton's own under `baton.`.
 */

/** The tracer's name (instrumentation scope) in every span Baton makes. */
const TRACER_NAME = 'baton-jobs';
/** `messaging.system` of every span. */
const SYSTEM = 'baton';

/** One span, or nothing when not tracing. Every method is safe to call in any order; calls after `end` are ignored. */
export interface TraceSpan {
  /** Runs `fn` with this span as the active one (spans started inside are its children). */
  within<T>(fn: () => T): T;
  /** Adds a span event named `name` (e.g. "baton.checkpoint"). */
  event(name: string, attributes?: Attributes): void;
  /** Sets attributes (skipped when the span records nothing). */
  set(attributes: Attributes | (() => Attributes)): void;
  /** Records `error` as an exception event and sets the status to ERROR. */
  fail(error: unknown): void;
  /** Ends the span; later calls do nothing. */
  end(): void;
}

/** A span that stamps the jobs it makes with its trace context. */
export interface ProducerSpan extends TraceSpan {
  /** The jobs with this span's W3C trace context as their `traceContext` (the same jobs when there is none). */
  stamp<J extends NewJob>(jobs: J[]): J[];
  /** Names the jobs the enqueue wrote (`messaging.message.id` for one, `baton.job.ids` for more; nothing for none). */
  written(jobs: Job[]): void;
}

/** What Baton traces; {@link loadTracing} gives the one of this process. */
export interface Tracing {
  /** A PRODUCER span `enqueue <task>` for jobs about to be inserted, a child of the active span. */
  enqueue(jobs: NewJob[]): ProducerSpan;
  /** A PRODUCER span `schedule <name>` for one tick of a schedule (its jobs are stamped with it). */
  scheduleTick(schedule: ScheduleRecord): ProducerSpan;
  /** A CONSUMER span `process <task>` for one attempt, a child of the job's stored trace context. */
  run(job: ClaimedJob, workerId: string): TraceSpan;
  /** An INTERNAL span `service <name>` for one run of a service. */
  service(name: string, fencingToken: number): TraceSpan;
  /** An INTERNAL span `step <name>` for one step that runs (`ctx.step`), a child of the run's span (the active one). */
  step(job: ClaimedJob, step: string): TraceSpan;
  /**
   * Runs `fn` in the trace context an incoming request carries (`headers`: lower-case
   * names, e.g. `traceparent`), unless a span is active already (the application's
   * own HTTP instrumentation made one from the same headers).
   */
  incoming<T>(headers: Record<string, string>, fn: () => T): T;
}

const NO_SPAN: ProducerSpan = {
  within: (fn) => fn(),
  event: () => undefined,
  set: () => undefined,
  fail: () => undefined,
  end: () => undefined,
  stamp: (jobs) => jobs,
  written: () => undefined,
};

/** Tracing without `@opentelemetry/api`: nothing is traced, nothing stored. */
const NO_TRACING: Tracing = {
  enqueue: () => NO_SPAN,
  scheduleTick: () => NO_SPAN,
  run: () => NO_SPAN,
  service: () => NO_SPAN,
  step: () => NO_SPAN,
  incoming: (_headers, fn) => fn(),
};

let loading: Promise<Tracing> | undefined;

/** Where OpenTelemetry's API 1.x keeps what the application registered: one object on `globalThis`, shared by every copy of the API. */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

/**
 * Whether the application registered a tracer provider, a context manager or a
 * propagator with OpenTelemetry's API. Without any of them every span is a no-op
 * and no context travels, so loading the API (and core) would only cost start-up
 * time (~70 ms on the bench machine; docs/benchmarks.md): many applications have the API installed
 * as some other package's dependency without tracing.
 */
function otelRegistered(): boolean {
  const registered = (globalThis as Record<symbol, Record<string, unknown> | undefined>)[OTEL_GLOBAL];
  return registered !== undefined && ['trace', 'context', 'propagation'].some((type) => registered[type] !== undefined);
}

/**
 * The tracing of this process: through `@opentelemetry/api` when it is installed
 * and the application registered a tracer provider, context manager or propagator
 * with it before this call (see {@link otelRegistered}), else {@link NO_TRACING}
 * (asked again at the next call). Loaded once (later calls return the same promise).
 * `@opentelemetry/core`, when installed, lends its W3C propagator to store and read
 * trace contexts while no global propagator is registered.
 * @throws whatever loading the installed API throws, other than its absence
 */
export function loadTracing(): Promise<Tracing> {
  if (loading === undefined && !otelRegistered()) return Promise.resolve(NO_TRACING);
  loading ??= (async () => {
    const api = await optionalImport<typeof OtelApi>('@opentelemetry/api');
    if (!api) return NO_TRACING;
    const core = await optionalImport<{ W3CTraceContextPropagator: new () => TextMapPropagator }>('@opentelemetry/core');
    return otelTracing(api, core ? new core.W3CTraceContextPropagator() : undefined);
  })();
  return loading;
}

/** `import(name)`, or undefined when that package is not installed. */
async function optionalImport<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    if (isMissingPackage(error, name)) return undefined;
    throw error;
  }
}

/** Tracing through the given API; `fallback` propagates while the application registered no propagator. */
function otelTracing(api: typeof OtelApi, fallback: TextMapPropagator | undefined): Tracing {
  const { trace, context, propagation, SpanKind, SpanStatusCode, ROOT_CONTEXT, isSpanContextValid } = api;
  // A ProxyTracer: it follows a tracer provider registered later.
  const tracer: Tracer = trace.getTracer(TRACER_NAME);
  /** The application's propagator, else the fallback; undefined: none (nothing is stored or read). */
  const propagator = (): Pick<TextMapPropagator, 'inject' | 'extract'> | undefined => (propagation.fields().length > 0 ? propagation : fallback);

  const wrap = (span: Span): TraceSpan => {
    const recording = span.isRecording();
    // A span of no trace (nothing registered, nothing incoming) has no context to pass on.
    const carries = recording || isSpanContextValid(span.spanContext());
    let ended = false;
    return {
      within: (fn) => (carries ? context.with(trace.setSpan(context.active(), span), fn) : fn()),
      event: (name, attributes) => {
        if (recording && !ended) span.addEvent(name, attributes);
      },
      set: (attributes) => {
        if (recording && !ended) span.setAttributes(typeof attributes === 'function' ? attributes() : attributes);
      },
      fail: (error) => {
        if (!recording || ended) return;
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      },
      end: () => {
        if (ended) return;
        ended = true;
        span.end();
      },
    };
  };

  const producer = (span: Span): ProducerSpan => {
    const base = wrap(span);
    let stored: string | null | undefined;
    /** The span's context as JSON text; null when it has none (not traced) or no propagator is registered. */
    const carrier = (): string | null => {
      if (stored !== undefined) return stored;
      const using = propagator();
      const fields: Record<string, string> = {};
      if (using && isSpanContextValid(span.spanContext())) using.inject(trace.setSpan(ROOT_CONTEXT, span), fields, api.defaultTextMapSetter);
      return (stored = Object.keys(fields).length > 0 ? JSON.stringify(fields) : null);
    };
    return {
      ...base,
      stamp: (jobs) => {
        const traceContext = carrier();
        return traceContext === null ? jobs : jobs.map((job) => ({ ...job, traceContext }));
      },
      written: (jobs) => {
        if (jobs.length > 0) base.set(() => (jobs.length === 1 ? { 'messaging.message.id': String(jobs[0]!.id) } : { 'baton.job.ids': jobs.map((j) => String(j.id)) }));
      },
    };
  };

  /** The one value all items share, else undefined. */
  const shared = (values: string[]): string | undefined => (values.every((v) => v === values[0]) ? values[0] : undefined);

  return {
    enqueue(jobs) {
      const task = shared(jobs.map((j) => j.task));
      const queue = shared(jobs.map((j) => j.queue));
      const span = tracer.startSpan(task === undefined ? 'enqueue' : `enqueue ${task}`, { kind: SpanKind.PRODUCER }, context.active());
      const traced = producer(span);
      traced.set(() => ({
        'messaging.system': SYSTEM,
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'enqueue',
        ...(queue === undefined ? {} : { 'messaging.destination.name': queue }),
        ...(task === undefined ? {} : { 'baton.task': task }),
        ...(jobs.length > 1 ? { 'messaging.batch.message_count': jobs.length } : {}),
      }));
      return traced;
    },

    scheduleTick(schedule) {
      const span = tracer.startSpan(`schedule ${schedule.name}`, { kind: SpanKind.PRODUCER }, ROOT_CONTEXT);
      const traced = producer(span);
      traced.set(() => ({
        'messaging.system': SYSTEM,
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'schedule',
        'messaging.destination.name': schedule.queue,
        'baton.task': schedule.task,
        'baton.schedule': schedule.name,
      }));
      return traced;
    },

    run(job, workerId) {
      const using = job.traceContext === null ? undefined : propagator();
      const parent = using ? using.extract(ROOT_CONTEXT, job.traceContext, api.defaultTextMapGetter) : ROOT_CONTEXT;
      const traced = wrap(tracer.startSpan(`process ${job.task}`, { kind: SpanKind.CONSUMER }, parent));
      traced.set(() => ({
        'messaging.system': SYSTEM,
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': job.queue,
        'messaging.message.id': String(job.id),
        'baton.task': job.task,
        'baton.attempt': job.attempt,
        'baton.max_attempts': job.maxAttempts,
        'baton.worker.id': workerId,
        ...(job.scheduleName === null ? {} : { 'baton.schedule': job.scheduleName }),
      }));
      return traced;
    },

    service(name, fencingToken) {
      const traced = wrap(tracer.startSpan(`service ${name}`, { kind: SpanKind.INTERNAL }, ROOT_CONTEXT));
      traced.set(() => ({ 'baton.service': name, 'baton.fencing_token': fencingToken }));
      return traced;
    },

    step(job, step) {
      const traced = wrap(tracer.startSpan(`step ${step}`, { kind: SpanKind.INTERNAL }, context.active()));
      traced.set(() => ({ 'baton.step': step, 'baton.task': job.task, 'messaging.message.id': String(job.id), 'baton.attempt': job.attempt }));
      return traced;
    },

    incoming(headers, fn) {
      const using = propagator();
      if (!using || isSpanContextValid(trace.getSpanContext(context.active()) ?? api.INVALID_SPAN_CONTEXT)) return fn();
      return context.with(using.extract(context.active(), headers, api.defaultTextMapGetter), fn);
    },
  };
}
