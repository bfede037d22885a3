import type { TraceSpan } from '../observe/tracing.js';
import { Children } from '../workflow/children.js';
import { StepLog } from '../workflow/steps.js';
import { Waits } from '../workflow/waits.js';
import type { ExecutorDeps } from './run-deps.js';
import type { RunOutcome } from './run-outcome.js';

/**
 * One run's step log, durable waits and child jobs (workflow/), wired to the store: their
 * writes go through `record.fenced` (retried through an outage as the run's other writes
 * are; a refused one ends the run as a lost lease), step reports become `job:step` events
 * and span events under `span`, `settled` (the handler returned or threw) stops the
 * child batcher from enqueueing for a run that is over, and `leaseRunOut` (JobRun's) keeps
 * a step's function from running once the lease has run out by the worker's clock.
 */
export function runWorkflow(signal: AbortSignal, deps: ExecutorDeps, span: TraceSpan, record: RunOutcome, settled: () => boolean, leaseRunOut: () => boolean): { steps: StepLog; waits: Waits; children: Children } {
  const { job } = record;
  const steps = new StepLog({
    job,
    signal,
    clock: deps.clock,
    payloadLimit: deps.payloadLimit,
    load: () => deps.store.jobStepList({ id: job.id }),
    save: async (step) => (await record.fenced('jobStepSave', () => deps.store.jobStepSave({ id: job.id, token: job.leaseToken, step }))) !== false,
    report: (event) => {
      if (event.outcome === 'replayed') span.event('baton.step_replayed', { 'baton.step': event.step });
      deps.events.emit('job:step', { job, ...event });
    },
    span: (step) => deps.tracing.step(job, step),
    active: () => !settled(),
    leaseRunOut,
  });
  const waits = new Waits({
    steps,
    signal,
    now: () => deps.clock.now(),
    payloadLimit: deps.payloadLimit,
    attempt: job.attempt,
    take: (p) => record.fenced('jobMessageTake', () => deps.store.jobMessageTake({ id: job.id, token: job.leaseToken, attempt: job.attempt, now: deps.clock.now(), ...p })),
  });
  const children = new Children({
    steps,
    waits,
    signal,
    prepare: (item) => deps.client.prepare(item),
    insert: (children) => record.fenced('jobEnqueueChildren', () => deps.store.jobEnqueueChildren({ id: job.id, token: job.leaseToken, attempt: job.attempt, now: deps.clock.now(), children })),
    list: () => deps.store.jobChildren({ id: job.id }),
    enqueued: (child) => deps.client.enqueued([{ job: child, created: true }]),
    active: () => !settled(),
  });
  return { steps, waits, children };
}
