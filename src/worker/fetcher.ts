import type { ClaimedJob } from '../job/types.js';
import { ClaimLoop } from './claim-loop.js';
import { byPlaceInLine } from '../job/line.js';
import { JobRun } from './executor.js';
import type { WorkerState } from './state.js';

/** Runs occupying a slot (started, slot not yet freed) and runs waiting for one (claimed ahead). */
interface SlotCounts {
  busy: number;
  waiting: number;
}

/** The worker's slot counts, and with per-queue slots (`queues` as a record) each served queue's. */
function slotCounts(state: WorkerState): SlotCounts & { byQueue: Map<string, SlotCounts> | null } {
  const total = { busy: 0, waiting: 0 };
  const byQueue = state.options.queueSlots ? new Map(state.options.queues.map((q) => [q, { busy: 0, waiting: 0 }])) : null;
  for (const run of state.runs) {
    const counts = byQueue?.get(run.job.queue);
    if (!run.started) {
      total.waiting++;
      if (counts) counts.waiting++;
    } else if (!run.slotFree) {
      total.busy++;
      if (counts) counts.busy++;
    }
  }
  return { ...total, byQueue };
}

/**
 * Starts waiting runs (claimed ahead, `prefetch`; with per-queue slots, any claimed job)
 * in their place in line (priority, runAt, id: claim order, also when two claims in
 * flight returned out of order) into the free slots: the worker's, and with per-queue slots its queue's
 * too (a run whose queue is full is passed over, the next may start). One whose lease
 * ran out while it waited is dropped as lost instead (JobRun.start). Does nothing once
 * the worker is stopping: the shutdown releases them.
 */
export function startWaiting(state: WorkerState): void {
  if (state.stopping) return;
  const counts = slotCounts(state);
  let free = state.options.concurrency - counts.busy;
  const slots = state.options.queueSlots;
  const waiting: JobRun[] = [];
  for (const run of state.runs) if (!run.started) waiting.push(run);
  waiting.sort((a, b) => byPlaceInLine(a.job, b.job));
  for (const run of waiting) {
    if (free <= 0) return;
    const queue = slots ? counts.byQueue!.get(run.job.queue)! : null;
    if (queue && queue.busy >= slots![run.job.queue]!) continue;
    if (run.start()) {
      free--;
      if (queue) queue.busy++;
    }
  }
}

/** One claim of a round: these queues, at most `limit` jobs. */
interface ClaimPart {
  queues: string[];
  limit: number;
}

/**
 * The claims of one round with per-queue slots: the queues whose own room (slots +
 * prefetch − held − reserved by claims in flight) is at least the worker's `room` in one
 * claim (their slots do not bind),
 * and each other queue with room in a claim of its own, bounded by its room. Each claim
 * takes at most what the ones before left of `room`; the start rotates by `round`, so
 * that under a total below the sum of slots no queue always claims last.
 */
function claimParts(state: WorkerState, counts: ReturnType<typeof slotCounts>, room: number, round: number): ClaimPart[] {
  const { queueSlots, queues, prefetch } = state.options;
  const open: string[] = [];
  const parts: ClaimPart[] = [];
  for (const queue of queues) {
    const held = counts.byQueue!.get(queue)!;
    const own = queueSlots![queue]! + prefetch - held.busy - held.waiting - state.reservations.queue(queue);
    if (own >= room) open.push(queue);
    else if (own > 0) parts.push({ queues: [queue], limit: own });
  }
  if (open.length > 0) parts.push({ queues: open, limit: room });
  const start = parts.length === 0 ? 0 : round % parts.length;
  return [...parts.slice(start), ...parts.slice(0, start)];
}

/** Claim rounds with per-queue slots so far, per worker, for {@link claimParts}' rotation. */
const rounds = new WeakMap<WorkerState, number>();

function nextRound(state: WorkerState): number {
  const round = (rounds.get(state) ?? 0) + 1;
  rounds.set(state, round);
  return round;
}

/** What one claim round did: `full` — every claim filled its limit (more may be due: a backlog); `short` — a claim took fewer jobs than it had room for; `none` — it claimed nothing for want of room (or the worker is stopping). */
export type ClaimResult = 'full' | 'short' | 'none';

/**
 * Room for a new claim round, in jobs: concurrency + prefetch − held (runs occupying a
 * slot or waiting for one) − reserved (by the rounds in flight), ≤ 0 when there is none.
 */
export function claimRoom(state: WorkerState): number {
  const counts = slotCounts(state);
  return state.options.concurrency + state.options.prefetch - counts.busy - counts.waiting - state.reservations.total;
}

/**
 * Claims due jobs into the free slots, plus up to `prefetch` more that wait for a slot
 * (one `jobClaim` for all of them), and starts a run for each, writing the completions
 * waiting in the completer in the same transaction (`jobCompleteAndClaim`: one commit
 * for the jobs that just ended and the ones that take their slots). With per-queue
 * slots (`queues` as a record), a queue takes at most its free slots (+ `prefetch`):
 * queues whose room the total bounds anyway share one claim, and each queue with less
 * room claims apart (one statement per such queue with room; the first carries the
 * completions). When a run frees its slot, `onSlotFree` is called so the worker can
 * start a waiting run and claim again; the run stays in `state.runs` until its outcome
 * is written. While the worker is stopping it claims nothing, and writes the waiting
 * completions alone.
 *
 * Several rounds may be in flight at once (claim-loop.ts): each reserves its room in
 * `state.reservations` before its first statement is sent (synchronously, in this call)
 * and releases it as its jobs become runs, so rounds in flight together never claim more
 * than concurrency + prefetch − held, nor per queue more than slots + prefetch − held.
 * @returns what the round did (see {@link ClaimResult})
 * @throws StoreError when the write failed (the completions taken are retried by the completer)
 */
export async function fetchJobs(state: WorkerState, onSlotFree: () => void): Promise<ClaimResult> {
  startWaiting(state);
  const counts = slotCounts(state);
  const room = state.options.concurrency + state.options.prefetch - counts.busy - counts.waiting - state.reservations.total;
  let parts: ClaimPart[] = [];
  if (!state.stopping && room > 0 && state.tasks.size > 0) {
    parts = counts.byQueue ? claimParts(state, counts, room, nextRound(state)) : [{ queues: state.options.queues, limit: room }];
  }
  const completions = state.executor.completer.take();
  let { items } = completions;
  if (parts.length === 0 && items.length === 0) return 'none';
  const release = state.reservations.reserve(Math.min(room, parts.reduce((sum, part) => sum + part.limit, 0)), parts);
  const claimed: ClaimedJob[] = [];
  let result: ClaimResult = parts.length === 0 ? 'none' : 'full';
  let failure: unknown;
  try {
    let left = room;
    for (const part of parts) {
      const limit = Math.min(part.limit, left);
      if (limit <= 0) break;
      const claim = { workerId: state.options.workerId, tasks: [...state.tasks.keys()], queues: part.queues, limit, leaseMs: state.options.leaseTtl, now: state.clock.now() };
      let jobs: ClaimedJob[];
      if (items.length === 0) jobs = await state.store.jobClaim(claim);
      else {
        const written = await state.store.jobCompleteAndClaim({ ...claim, items });
        completions.settle(written);
        items = [];
        jobs = written.claimed;
      }
      claimed.push(...jobs);
      left -= jobs.length;
      if (jobs.length < limit) result = 'short';
    }
    if (items.length > 0) completions.settle(await state.store.jobCompleteMany({ items, now: state.clock.now() }));
  } catch (error) {
    if (items.length > 0) completions.fail(error);
    failure = error;
  }
  try {
    // Jobs an earlier claim of the round took are this worker's even when a later one failed: they run.
    if (claimed.length > 0) addRuns(state, claimed, onSlotFree);
  } finally {
    release(); // in the same turn as the jobs became runs: counted as held from here on
  }
  if (failure !== undefined) throw failure;
  return result;
}

/**
 * Starts a run for each claimed job, in claim order. Slots freed while the claim was in
 * flight went to waiting runs (onSlotFree); the new jobs take what is left, after any
 * run still waiting (with per-queue slots, {@link startWaiting} places them). If stop()
 * began while it was in flight, every job waits: the shutdown hands them back with the
 * jobs claimed ahead (job:released, counted in its summary, attempt not counted).
 */
function addRuns(state: WorkerState, claimed: ClaimedJob[], onSlotFree: () => void): void {
  const perQueue = state.options.queueSlots !== null;
  const after = slotCounts(state);
  let free = state.stopping || perQueue ? 0 : state.options.concurrency - after.busy - after.waiting;
  for (const job of claimed) {
    // Before the run: a run that does not wait starts its handler (and emits job:started) as it is made.
    state.events.emit('job:claimed', { job });
    const run = new JobRun(job, state.tasks.get(job.task)!, state.executor, free-- <= 0);
    state.runs.add(run);
    void run.slotFreed.then(onSlotFree);
    void run.done.then(() => state.runs.delete(run));
  }
  if (perQueue) startWaiting(state);
}

/**
 * The worker's fetch loop (claim-loop.ts) over {@link fetchJobs}: up to the store's
 * `claimsInFlight` rounds at once, every `pollInterval` and on each `wake`. A freed slot
 * goes to a job claimed ahead at once ({@link startWaiting}), and `wake` asks for the
 * claim that refills it.
 * @param deps.wake - claims soon (the worker coalesces wake-ups within one turn)
 * @param deps.afterShortClaim - called after a round that took fewer jobs than it had room for (rate-limit wake-ups)
 */
export function fetchLoop(state: WorkerState, deps: { wake: () => void; afterShortClaim: () => Promise<void>; onError: (loop: string, error: unknown, failures: number) => void }): ClaimLoop {
  const onSlotFree = () => {
    startWaiting(state);
    deps.wake();
  };
  return new ClaimLoop({
    intervalMs: state.options.pollInterval,
    maxInFlight: state.store.claimsInFlight,
    room: () => claimRoom(state),
    onError: deps.onError,
    pass: async () => {
      const result = await fetchJobs(state, onSlotFree);
      if (result === 'short') await deps.afterShortClaim();
      return result;
    },
  });
}
