import { ShutdownError } from '../errors.js';
import type { StopSummary } from './events.js';
import type { JobRun } from './executor.js';
import { persist, settlesBy } from './persist.js';
import type { WorkerState } from './state.js';

/**
 * What the stop gives the writes still pending once the abort grace is over — the
 * outcome writes of runs retrying through a database outage and the final release —
 * before it gives up on them: 2 s. A job whose write gave up stays `running` under
 * this worker's lease in the database and is taken over when the lease expires
 * (`leaseTtl`); the stop summary lists it in `unreleased`. With the database
 * reachable the writes take milliseconds, so the budget only matters in an outage.
 */
export const RELEASE_BUDGET_MS = 2000;

/**
 * Graceful shutdown, SPEC steps 1–4 (the worker does step 5):
 * 1. stop claiming, and release the jobs claimed ahead that have not started; 2. let
 * running jobs finish up to `drainTimeout`; 3. abort the
 * rest with ShutdownError and give them `abortGrace`; 4. release every job still
 * held in one `jobRelease`: queued, runAt kept (due at once, in its place in line),
 * attempt not counted, checkpoint kept; then, once `claimsEnded` (the fetch loop's
 * claims in flight) settles, by the stop deadline at most, release the jobs those took.
 * When `fast` resolves (a second signal) it skips to step 4 at once. `summary` is
 * counting since the stop began ({@link countOutcomes}); it is completed and returned.
 *
 * The drain runs from `startedAt` (ms since the epoch), when the stop began, whatever
 * the worker waited for since (a claim in flight on a store that cannot answer).
 *
 * Budget: every write about a job ends by the stop deadline, drainTimeout +
 * abortGrace + {@link RELEASE_BUDGET_MS} after the stop began (a second signal moves
 * it to {@link RELEASE_BUDGET_MS} from then). Writes retry through a database outage
 * until then and give up after: the jobs they were about are returned in
 * `unreleased` and logged in one line. It resolves once no write about a job is
 * pending, so the store can be closed safely right after.
 */
export async function shutdown(state: WorkerState, fast: Promise<void>, claimsEnded: Promise<unknown>, startedAt: number, summary: StopSummary): Promise<StopSummary> {
  const { options, clock } = state;
  state.stopping = true;
  state.stopDeadline = Math.min(state.stopDeadline, stopDeadline(state, startedAt));
  // Runs leave state.runs when their slot frees, including a shutdown-aborted handler
  // that outlived abortGrace and still holds its lease: keep them all for step 4.
  const all = [...state.runs];
  // Jobs claimed ahead and not started are handed back now (attempt not counted), not held through the drain.
  for (const run of all) if (!run.started) run.abort(new ShutdownError());
  let skipped = false;
  const skip = fast.then(() => {
    skipped = true;
    state.stopDeadline = Math.min(state.stopDeadline, clock.now() + RELEASE_BUDGET_MS);
  });

  await waitForRuns(state.runs, Math.max(0, startedAt + options.drainTimeout - clock.now()), skip);
  if (!skipped && state.runs.size > 0) {
    for (const run of all) run.abort(new ShutdownError());
    await waitForRuns(state.runs, options.abortGrace, skip);
  }
  // With the runs of a claim that landed after the snapshot (one the stop did not wait for: a store that could not answer).
  const every = new Set([...all, ...state.runs]);
  const unreleased = new Set<number>();
  await handBack(state, [...every], unreleased);
  // A claim still in flight (stop() waits for it until the drain's end at most) can land
  // after that release: its jobs wait, never started, under this worker's lease. Hand
  // them back too, or they would sit `running` until the lease ran out.
  await settlesBy(claimsEnded, state.stopDeadline, clock);
  const late = [...state.runs].filter((run) => !every.has(run));
  for (const run of late) every.add(run);
  await handBack(state, late, unreleased);
  // Outcome writes still retrying give up by the stop deadline (see executor.ts).
  await waitForRuns(every, Math.max(0, state.stopDeadline - clock.now()), new Promise(() => undefined));
  for (const run of every) if (run.stranded || !run.writesSettled) unreleased.add(run.job.id);
  summary.unreleased = [...unreleased].sort((a, b) => a - b);
  summary.abandoned = [...every].filter((run) => !run.settled).length;
  if (summary.unreleased.length > 0) {
    state.logger.warn(
      { unreleased: summary.unreleased, leaseTtl: options.leaseTtl },
      `${summary.unreleased.length === 1 ? '1 job' : `${summary.unreleased.length} jobs`} could not be handed back (the database could not be reached within the stop's budget): still running under this worker's lease, taken over by another worker when it expires`,
    );
  }
  return summary;
}

/**
 * Counts the worker's outcomes into a stop summary from now on: `finished` for each
 * job:completed, job:failed and job:cancelled, `released` for each job:released. The stop
 * calls it as it begins, so jobs that end while it waits for the claims in flight count.
 * @returns the summary, counted live (`abandoned` and `unreleased` are the shutdown's to
 *   fill), and a function that stops the counting
 */
export function countOutcomes(state: WorkerState): { summary: StopSummary; off: () => void } {
  const summary: StopSummary = { finished: 0, released: 0, abandoned: 0, unreleased: [] };
  const offs = [
    state.events.on('job:completed', () => summary.finished++),
    state.events.on('job:failed', () => summary.finished++),
    state.events.on('job:cancelled', () => summary.finished++),
    state.events.on('job:released', () => summary.released++),
  ];
  return { summary, off: () => offs.forEach((off) => off()) };
}

/**
 * When a stop that began at `startedAt` (ms since the epoch) gives up on every write
 * about a job: drainTimeout + abortGrace + {@link RELEASE_BUDGET_MS} later.
 */
export function stopDeadline(state: WorkerState, startedAt: number): number {
  return startedAt + state.options.drainTimeout + state.options.abortGrace + RELEASE_BUDGET_MS;
}

/**
 * Aborts the runs still holding their lease (ShutdownError) and releases them in one
 * `jobRelease` (emitting job:released for each released); adds to `unreleased` the jobs
 * whose release gave up by the stop deadline.
 */
async function handBack(state: WorkerState, runs: JobRun[], unreleased: Set<number>): Promise<void> {
  const left = runs.filter((run) => run.holding);
  for (const run of left) run.abort(new ShutdownError());
  const leases = left.filter((run) => run.relinquish()).map((run) => ({ id: run.job.id, token: run.job.leaseToken }));
  if (leases.length === 0) return;
  try {
    const released = new Set(
      await persist(() => state.store.jobRelease({ leases, now: state.clock.now() }), { deadline: () => state.stopDeadline, clock: state.clock, logger: () => state.logger, op: 'jobRelease' }),
    );
    for (const run of left) {
      run.handedBack(released.has(run.job.id));
      if (released.has(run.job.id)) state.events.emit('job:released', { job: run.job, ...(run.settled ? {} : { abandoned: true }) });
    }
  } catch (error) {
    state.logger.error({ err: error, jobs: leases.map((l) => l.id) }, 'releasing jobs at shutdown failed');
    for (const lease of leases) unreleased.add(lease.id);
    for (const run of left) run.handedBack(false);
  }
}

/** Resolves when every run's `done` resolved, `ms` passed, or `skip` resolved. */
async function waitForRuns(runs: Iterable<JobRun>, ms: number, skip: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all([...runs].map((run) => run.done)),
    new Promise((resolve) => (timer = setTimeout(resolve, ms))),
    skip,
  ]);
  clearTimeout(timer);
}
