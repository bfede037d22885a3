/**
 * What the soak's worker processes run (issue 34, item 2): every handler recorded in the
 * external ledger (recorder.ts), with the settings the checker is told about
 * ({@link FLEET}).
 *
 * | task       | queue     | what it does                                                          |
 * |------------|-----------|-----------------------------------------------------------------------|
 * | `short`    | default   | 5–30 ms, then its result                                              |
 * | `long`     | default   | 20 rounds of 150 ms, a checkpoint every other round, resumed from it  |
 * | `stepped`  | default   | five steps, a durable sleep of 2 s between the second and the third   |
 * | `receiver` | default   | waits (no timeout) for one message on `go`, which the soak sends      |
 * | `parent`   | default   | three `short` children, then waits for them                           |
 * | `keyed`    | `limited` | 20–120 ms under a concurrency key (limit 1), in a queue with a fleet  |
 * |            |           | limit and a rate limit                                                |
 * | `tick`     | default   | the job of the 1-second schedule `soak-tick`                          |
 *
 * Around them: the service `soak-service` (300 ms runs, due again 700 ms after each) and
 * `withLock` sections on `soak-lock` that write their fencing token to the soak's fencing
 * store twice, 200 ms apart. Handlers keep the fleet's rules (docs/reliability.md): every
 * wait is `sleep(ms, signal)`, so they stop promptly on abort; they throw nothing on
 * purpose; a completed job's result is written through `run.result`.
 */
import { defineQueue, defineSchedule, defineService, defineTask, sleep, type Baton, type Json } from 'baton-jobs';
import type { FenceClient } from './fence-store.js';
import type { LedgerWriter } from './ledger.js';
import { recorded, type RecordedRun } from './recorder.js';

/** The fleet's settings, shared by the worker processes and the checker. Times in ms. */
export const FLEET = {
  /** Worker processes (slots the nemesis targets). */
  workers: 4,
  /** Each worker's concurrency. */
  concurrency: 16,
  /**
   * Each worker's lease. Longer than a restart of the soak's own small cluster takes even
   * on a loaded machine (a write retried through an outage is given up when the lease would
   * have run out, and the job then runs again: a re-run no holder fault explains), short
   * enough that a freeze or a cut-off (1.5–3 leases) surely loses it.
   */
  leaseTtl: 10_000,
  heartbeatInterval: 1_000,
  rescueInterval: 1_000,
  pollInterval: 500,
  /** A SIGTERMed worker's drain, then the grace its aborted handlers get: the checker's `abandonAfterMs` is their sum. */
  drainTimeout: 3_000,
  abortGrace: 2_000,
  /** The queue `keyed` runs in: at most 4 running fleet-wide, at most 20 starts in any second. */
  limited: { name: 'limited', concurrency: 4, rate: { limit: 20, periodMs: 1_000 } },
  /** Keys of `keyed` jobs (`customer-0` …), one running at a time each. */
  customers: 8,
  schedule: { name: 'soak-tick', everyMs: 1_000 },
  service: 'soak-service',
  lock: 'soak-lock',
  /** Message topic `receiver` waits on. */
  topic: 'go',
  /** Generous attempts: every SIGKILL or freeze of a holder costs its jobs one. */
  maxAttempts: 25,
} as const;

/** A worker process's definitions: its tasks, queue, schedule and service, each recording to `ledger` as `worker`. */
export function fleetDefinitions(ledger: LedgerWriter, worker: string) {
  const task = <P>(name: string, handler: (payload: P, run: RecordedRun) => Promise<Json>, queue?: ReturnType<typeof defineQueue>) =>
    defineTask(name, { maxAttempts: FLEET.maxAttempts, ...(queue ? { queue } : {}), handler: recorded(ledger, worker, handler) });
  const limited = defineQueue(FLEET.limited.name, { concurrency: FLEET.limited.concurrency, rateLimit: FLEET.limited.rate });

  const short = task('short', async (p: { ms: number }, run) => {
    await sleep(p.ms, run.ctx.signal);
    return run.result({ ms: p.ms });
  });
  const long = task('long', async (_: null, run) => {
    const seen = run.ctx.checkpoint as { round?: number } | null;
    let round = seen?.round ?? 0;
    while (round < 20) {
      await sleep(150, run.ctx.signal);
      round++;
      if (round % 2 === 0) await run.checkpoint({ round });
      run.progress(round, 20);
    }
    return run.result({ round });
  });
  const stepped = task('stepped', async (_: null, run) => {
    let sum = 0;
    for (const n of [1, 2, 3, 4, 5]) {
      sum += await run.step(`s${n}`, async (signal) => {
        await sleep(20, signal);
        return n;
      });
      if (n === 2) await run.ctx.sleep(2_000);
    }
    return run.result({ sum });
  });
  const receiver = task('receiver', async (_: null, run) => run.result({ got: (await run.receive(FLEET.topic)).messageId }));
  const parent = task('parent', async (_: null, run) => {
    for (const n of [1, 2, 3]) await run.enqueueChild('short', { ms: 5 * n });
    await run.ctx.waitForChildren();
    return run.result();
  });
  const keyed = defineTask('keyed', {
    maxAttempts: FLEET.maxAttempts,
    queue: limited,
    concurrency: { key: (p: { customer: string; ms: number }) => p.customer, limit: 1 },
    handler: recorded(ledger, worker, async (p: { customer: string; ms: number }, run) => {
      await sleep(p.ms, run.ctx.signal);
      return run.result({ customer: p.customer });
    }),
  });
  const tick = task('tick', async (_: null, run) => {
    ledger.record({ kind: 'tick-run', schedule: FLEET.schedule.name, instant: run.ctx.job.scheduledFor!.getTime(), jobId: run.jobId });
    return run.result();
  });
  const schedule = defineSchedule(FLEET.schedule.name, { every: FLEET.schedule.everyMs, task: tick, payload: null, catchUp: 'all', overlap: 'allow' });
  const service = defineService(FLEET.service, {
    leaseTtl: FLEET.leaseTtl,
    pollInterval: 1_000,
    run: async ({ signal, fencingToken }) => {
      ledger.record({ kind: 'service-start', service: FLEET.service, token: fencingToken });
      try {
        await sleep(300, signal);
      } finally {
        ledger.record({ kind: 'service-end', service: FLEET.service, token: fencingToken });
      }
      return new Date(Date.now() + 700);
    },
  });
  return { tasks: [short, long, stepped, receiver, parent, keyed, tick], queues: [limited], schedules: [schedule], services: [service] };
}

/**
 * Runs `withLock` sections until `signal` aborts, one every 500–1,500 ms: each writes its
 * fencing token to the fencing store, holds 200 ms, and writes it again. A busy lock, the
 * database away or the lock lost mid-section ends only that section.
 */
export async function lockSections(baton: Baton, fence: FenceClient, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    await sleep(500 + Math.random() * 1_000, signal).catch(() => undefined);
    if (signal.aborted) return;
    try {
      await baton.withLock(FLEET.lock, { ttl: 3_000 }, async (lock) => {
        await fence.write(FLEET.lock, lock.fencingToken, { pid: process.pid }, lock.signal);
        await sleep(200, lock.signal);
        await fence.write(FLEET.lock, lock.fencingToken, { pid: process.pid }, lock.signal);
      });
    } catch {
      // busy (LockBusyError), the database away, or the lock lost mid-section: the next section tries again
    }
  }
}
