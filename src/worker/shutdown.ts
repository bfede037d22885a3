import { ShutdownError } from '../errors.js';
import type { StopSummary } from './events.js';
import type { JobRun } from './executor.js';
import type { WorkerState } from './state.js';

/**
 * Graceful shutdown, SPEC steps 1–4 (the worker does step 5):
 * 1. stop claiming; 2. let running jobs finish up to `drainTimeout`; 3. abort the
 * rest with ShutdownError and give them `abortGrace`; 4. release every job still
 * held in one `jobRelease`: queued, runAt now, attempt not counted, checkpoint kept.
 * When `fast` resolves (a second signal) it skips to step 4 at once.
 */
export async function shutdown(state: WorkerState, fast: Promise<void>): Promise<StopSummary> {
  const summary: StopSummary = { finished: 0, released: 0, abandoned: 0 };
  const offs = [
    state.events.on('job:completed', () => summary.finished++),
    state.events.on('job:failed', () => summary.finished++),
    state.events.on('job:cancelled', () => summary.finished++),
    state.events.on('job:released', () => summary.released++),
  ];
  state.stopping = true;
  // Runs leave state.runs when their slot frees, including a shutdown-aborted handler
  // that outlived abortGrace and still holds its lease: keep them all for step 4.
  const all = [...state.runs];
  let skipped = false;
  const skip = fast.then(() => (skipped = true));

  await waitForRuns(state, state.options.drainTimeout, skip);
  if (!skipped && state.runs.size > 0) {
    for (const run of all) run.abort(new ShutdownError());
    await waitForRuns(state, state.options.abortGrace, skip);
  }
  const left: JobRun[] = all.filter((run) => run.holding);
  for (const run of left) run.abort(new ShutdownError());
  const leases = left.filter((run) => run.relinquish()).map((run) => ({ id: run.job.id, token: run.job.leaseToken }));
  if (leases.length > 0) {
    const released = new Set(await state.store.jobRelease({ leases, now: state.clock.now() }));
    for (const run of left) if (released.has(run.job.id)) state.events.emit('job:released', { job: run.job, ...(run.settled ? {} : { abandoned: true }) });
  }
  summary.abandoned = all.filter((run) => !run.settled).length;
  for (const off of offs) off();
  return summary;
}

/** Resolves when every run is done, `ms` passed, or `skip` resolved. */
async function waitForRuns(state: WorkerState, ms: number, skip: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all([...state.runs].map((run) => run.done)),
    new Promise((resolve) => (timer = setTimeout(resolve, ms))),
    skip,
  ]);
  clearTimeout(timer);
}
