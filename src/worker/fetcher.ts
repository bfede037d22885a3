import type { ClaimedJob } from '../job/types.js';
import { JobRun } from './executor.js';
import type { WorkerState } from './state.js';

/** Runs occupying a slot (started, slot not yet freed) and runs waiting for one (claimed ahead). */
function slotCounts(state: WorkerState): { busy: number; waiting: number } {
  let busy = 0;
  let waiting = 0;
  for (const run of state.runs) {
    if (!run.started) waiting++;
    else if (!run.slotFree) busy++;
  }
  return { busy, waiting };
}

/**
 * Starts waiting runs (claimed ahead, `prefetch`) in claim order into the free slots; one
 * whose lease ran out while it waited is dropped as lost instead (JobRun.start).
 * Does nothing once the worker is stopping: the shutdown releases them.
 */
export function startWaiting(state: WorkerState): void {
  if (state.stopping) return;
  let free = state.options.concurrency - slotCounts(state).busy;
  for (const run of state.runs) {
    if (free <= 0) return;
    if (!run.started && run.start()) free--;
  }
}

/**
 * Claims due jobs into the free slots, plus up to `prefetch` more that wait for a slot
 * (one `jobClaim` for all of them), and starts a run for each, writing the completions
 * waiting in the completer in the same transaction (`jobCompleteAndClaim`: one commit
 * for the jobs that just ended and the ones that take their slots). When a run frees
 * its slot, `onSlotFree` is called so the worker can start a waiting run and claim
 * again; the run stays in `state.runs` until its outcome is written. While the worker
 * is stopping it claims nothing, and writes the waiting completions alone.
 * @returns whether the claim took fewer jobs than it had room for (false when it claimed nothing because there was no room)
 * @throws StoreError when the write failed (the completions taken are retried by the completer)
 */
export async function fetchJobs(state: WorkerState, onSlotFree: () => void): Promise<boolean> {
  startWaiting(state);
  const { busy, waiting } = slotCounts(state);
  const room = state.options.concurrency + state.options.prefetch - busy - waiting;
  const completions = state.executor.completer.take();
  const { items } = completions;
  let claimed: ClaimedJob[];
  try {
    if (state.stopping || room <= 0 || state.tasks.size === 0) {
      if (items.length > 0) completions.settle(await state.store.jobCompleteMany({ items, now: state.clock.now() }));
      return false;
    }
    const claim = {
      workerId: state.options.workerId,
      tasks: [...state.tasks.keys()],
      queues: state.options.queues,
      limit: room,
      leaseMs: state.options.leaseTtl,
      now: state.clock.now(),
    };
    if (items.length === 0) claimed = await state.store.jobClaim(claim);
    else {
      const written = await state.store.jobCompleteAndClaim({ ...claim, items });
      completions.settle(written);
      claimed = written.claimed;
    }
  } catch (error) {
    completions.fail(error);
    throw error;
  }
  // Slots freed while the claim was in flight went to waiting runs (onSlotFree); the
  // new jobs take what is left, in claim order, after any run still waiting. If stop()
  // began while it was in flight, every job waits: the shutdown hands them back with
  // the jobs claimed ahead (job:released, counted in its summary, attempt not counted).
  const after = slotCounts(state);
  let free = state.stopping ? 0 : state.options.concurrency - after.busy - after.waiting;
  for (const job of claimed) {
    // Before the run: a run that does not wait starts its handler (and emits job:started) as it is made.
    state.events.emit('job:claimed', { job });
    const run = new JobRun(job, state.tasks.get(job.task)!, state.executor, free-- <= 0);
    state.runs.add(run);
    void run.slotFreed.then(onSlotFree);
    void run.done.then(() => state.runs.delete(run));
  }
  return claimed.length < room;
}
