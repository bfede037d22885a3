/**
 * The rescuer of expired leases (src/maintenance/rescuer.ts), on both drivers: what
 * one pass settles, and that the worker whose rescuer requeued a job claims it at
 * once rather than at its next poll (on SQLite a worker's change watch does not see
 * its own commit). Time is moved by injected clocks, never by sleeping.
 */
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

/** A promise with its resolve function. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Attempt 1 holds its slot until `held` opens (ignoring its signal); later attempts return at once. */
function heldTask(held: Promise<void>) {
  return defineTask('held', {
    maxAttempts: 3,
    handler: async (_: null, ctx) => {
      if (ctx.job.attempt === 1) await held;
      return `attempt ${ctx.job.attempt}`;
    },
  });
}

/** A clock that reads the wall clock plus an offset the test moves. */
function shiftedClock() {
  const clock = { offset: 0, now: () => Date.now() + clock.offset };
  return clock;
}

/**
 * A job running under a worker with a long lease and a slow heartbeat, its handler
 * held until `held.open()`: only an injected `now` (or a shifted clock) makes its
 * lease run out. The holder has one slot, which attempt 1 keeps: once the job is
 * requeued (keeping its place in line, so due at once) the holder cannot claim it.
 */
async function heldRunningJob() {
  const baton = await openBaton();
  const held = gate();
  const task = heldTask(held.opened);
  const holder = baton.worker({ tasks: [task], concurrency: 1, leaseTtl: 60_000, heartbeatInterval: 30_000 });
  const claimed = waitForEvent(holder, 'job:claimed');
  await holder.start();
  const job = await baton.enqueue(task, null);
  await claimed;
  return { baton, held, task, job };
}

describe('rescuer', () => {
  it('runOnce(now) requeues a job whose lease expired before now, with a "lease expired" error, and leaves a live lease alone', async () => {
    const { baton, held, task, job } = await heldRunningJob();

    // Not a worker that runs: its loops are driven by hand.
    const other = baton.worker({ tasks: [task] });
    expect(await other.loops.rescue(Date.now() + 1000)).toEqual({ requeued: [], failed: [], cancelled: [] });
    expect((await baton.getJob(job.id)).state).toBe('running');

    expect(await other.loops.rescue(Date.now() + 120_000)).toEqual({ requeued: [job.id], failed: [], cancelled: [] });
    // `other` was never started: its rescue pass must not wake it into claiming (it
    // once did, on the next turn). Ten reads in a row give such a claim time to land.
    for (let read = 0; read < 10; read++) expect((await baton.getJob(job.id)).state).toBe('queued');
    const after = await baton.getJob(job.id);
    expect(after.attempt).toBe(1);
    expect(after.errors.map((e) => e.message)).toEqual([expect.stringMatching(/^lease expired/)]);
    held.open();
  });

  // Fails without the wake-up on SQLite: the rescuing worker then claims only at its
  // next poll, an hour later (the wait below gives up after a minute).
  it('the worker whose rescuer requeued an expired lease claims the job at once, not at its next poll', async () => {
    const { baton, held, task, job } = await heldRunningJob();

    // The rescuer starts with its clock on time (its first passes find nothing to
    // rescue, and its first claim finds nothing queued), then jumps two minutes
    // ahead: its next timed rescue pass sees the lease expired. It polls only every
    // hour, and the holder's one slot is still taken by attempt 1: only the
    // rescuer can claim the requeued job, and only if woken.
    const clock = shiftedClock();
    const rescuer = baton.worker({ tasks: [task], clock, pollInterval: 3_600_000, rescueInterval: 50 });
    await rescuer.start();
    expect((await baton.getJob(job.id)).state).toBe('running');

    const rescued = waitForEvent(rescuer, 'job:claimed', (e) => e.job.id === job.id);
    const completed = waitForEvent(rescuer, 'job:completed', (e) => e.job.id === job.id);
    clock.offset = 120_000;
    const second = await rescued;
    expect(second.job.attempt).toBe(2);
    expect((await completed).result).toBe('attempt 2');
    held.open();
  });
});
