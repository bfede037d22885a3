import type { ClaimedJob } from '../job/types.js';
import { JobRun } from './executor.js';
import type { WorkerState } from './state.js';

/**
 * Claims due jobs into the free slots (one `jobClaim` for all of them) and starts
 * a run for each, writing the completions waiting in the completer in the same
 * transaction (`jobCompleteAndClaim`: one commit for the jobs that just ended and the
 * ones that take their slots). When a run frees its slot, `onSlotFree` is called so
 * the worker can claim again; the run stays in `state.runs` until its outcome is
 * written. While the worker is stopping it claims nothing, and writes the waiting
 * completions alone.
 * @returns whether the claim filled fewer slots than were free (false when it claimed nothing because none was free)
 * @throws StoreError when the write failed (the completions taken are retried by the completer)
 */
export async function fetchJobs(state: WorkerState, onSlotFree: () => void): Promise<boolean> {
  let busy = 0;
  for (const run of state.runs) if (!run.slotFree) busy++;
  const free = state.options.concurrency - busy;
  const completions = state.executor.completer.take();
  const { items } = completions;
  let claimed: ClaimedJob[];
  try {
    if (state.stopping || free <= 0 || state.tasks.size === 0) {
      if (items.length > 0) completions.settle(await state.store.jobCompleteMany({ items, now: state.clock.now() }));
      return false;
    }
    const claim = {
      workerId: state.options.workerId,
      tasks: [...state.tasks.keys()],
      queues: state.options.queues,
      limit: free,
      leaseMs: state.options.leaseTtl,
      now: state.clock.now(),
    };
    if (items.length === 0) claimed = await state.store.jobClaim(claim);
    else {
      const written = await state.store.jobCompleteAndClaim({ ...claim, items });
      completions.settle(written.completed);
      claimed = written.claimed;
    }
  } catch (error) {
    completions.fail(error);
    throw error;
  }
  if (state.stopping && claimed.length > 0) {
    // stop() began while this claim was in flight: hand the jobs straight back.
    await state.store.jobRelease({ leases: claimed.map((job) => ({ id: job.id, token: job.leaseToken })), now: state.clock.now() });
    return false;
  }
  for (const job of claimed) {
    const run = new JobRun(job, state.tasks.get(job.task)!, state.executor);
    state.runs.add(run);
    state.events.emit('job:claimed', { job });
    void run.slotFreed.then(onSlotFree);
    void run.done.then(() => state.runs.delete(run));
  }
  return claimed.length < free;
}
