/**
 * Schedule overlap policies (issue 12), cases.md-style, on both drivers: a
 * `*\/30 * * * * *` schedule whose job runs 70 s, for 190 s, with two workers (two
 * processes' worth: two Baton instances on one database). Time is a clock the test
 * moves, and a run "takes 70 s" because the test ends it at its start + 70 s, so the
 * sequence is the scenario's whatever the machine's speed:
 * - skip: runs at 0, 90 and 180, never two at once; ticks 30, 60, 120 and 150 end
 *   `cancelled` as skipped at once, each with a `schedule:overlapped` event;
 * - queue: at most one waits: runs at 0, 70 (tick 60), 140 (tick 120), 210 (tick 180);
 *   ticks 30, 90 and 150 are superseded while waiting;
 * - allow: seven runs, up to three at once;
 * - cancelPrevious: each tick cancels the running one (its handler hears a
 *   CancelledError naming the new job, and it ends `cancelled`), then runs.
 */
import { describe, expect, it } from 'vitest';
import { CancelledError, defineTask, type Baton, type Clock, type Job, type Worker, type WorkerEvents } from 'baton-jobs';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { listFullJobs } from '../helpers/client.js';

const T0 = Date.parse('2026-03-02T12:00:00Z');
const S = 1000;

/** A clock the test moves by hand. */
function manualClock(start: number): Clock & { set(ms: number): void } {
  let now = start;
  return { now: () => now, set: (ms) => (now = ms) };
}

/** Resolves once `predicate` holds, checked at every event of either worker. */
function when(workers: Worker[], predicate: () => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const events: Array<keyof WorkerEvents> = ['job:claimed', 'job:completed', 'job:cancelled', 'job:failed', 'schedule:enqueued', 'schedule:overlapped'];
    const offs: Array<() => void> = [];
    const timer = setTimeout(() => (offs.forEach((off) => off()), reject(new Error(`timed out waiting for ${what}`))), 60_000);
    const check = () => {
      if (!predicate()) return;
      clearTimeout(timer);
      offs.forEach((off) => off());
      resolve();
    };
    for (const w of workers) for (const e of events) offs.push(w.on(e, () => setImmediate(check)));
    check();
  });
}

/** Two workers on one database with a hand-moved clock, a 70 s task and the schedule under `overlap`. */
async function fleet(overlap: 'skip' | 'queue' | 'allow' | 'cancelPrevious') {
  const db = tempDatabase();
  const clock = manualClock(T0 - S);
  const a = await openBaton({ database: db.url, clock });
  const b = await openBaton({ database: db.url, clock });
  /** In order: `start:<tick s>`, `end:<tick s>` (completed) or `cancelled:<tick s>` (the handler heard the cancel). */
  const log: string[] = [];
  const release = new Map<number, () => void>();
  const heard = new Map<number, unknown>();
  const long = defineTask('long', {
    handler: async (_payload: null, ctx) => {
      const tick = (ctx.job.scheduledFor!.getTime() - T0) / S;
      log.push(`start:${tick}`);
      try {
        await new Promise<void>((resolve, reject) => {
          release.set(tick, resolve);
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        });
        log.push(`end:${tick}`);
        return 'ran 70 s';
      } catch (error) {
        heard.set(tick, error);
        log.push(`cancelled:${tick}`);
        throw error;
      }
    },
  });
  await a.schedule('every30', { cron: '*/30 * * * * *', task: long, payload: null, overlap });
  // Leases of an hour: the clock jumps 190 s, and no lease may expire on the way.
  const options = { tasks: [long], concurrency: 4, leaseTtl: 3_600_000, pollInterval: 60_000 };
  const workers = [a.worker(options), b.worker(options)];
  for (const w of workers) await w.start();
  const overlapped: number[] = [];
  for (const w of workers) w.on('schedule:overlapped', (e) => overlapped.push((e.scheduledFor.getTime() - T0) / S));
  const jobs = async () => (await listFullJobs(a, { limit: 100 })).filter((j) => j.scheduleName === 'every30').sort((x, y) => x.id - y.id);
  const job = async (tick: number): Promise<Job> => (await jobs()).find((j) => j.scheduledFor!.getTime() === T0 + tick * S)!;
  const started = (tick: number) => when(workers, () => log.includes(`start:${tick}`), `the run of tick ${tick}`);
  return {
    a, workers, log, heard, overlapped, jobs, job, started,
    /** Moves the clock to `s` seconds and runs the scheduler's pass there (one worker's: any instance may). */
    async tick(s: number) {
      clock.set(T0 + s * S);
      await workers[s % 60 === 0 ? 0 : 1]!.loops.scheduler(T0 + s * S);
    },
    /** Moves the clock to `s` and ends the run of tick `tick` (its 70 s are up); resolves when it is completed. */
    async end(s: number, tick: number) {
      clock.set(T0 + s * S);
      release.get(tick)!();
      await when(workers, () => log.includes(`end:${tick}`), `the end of tick ${tick}`);
      await expectState(a, await job(tick), 'completed');
    },
    async stop() {
      for (const r of release.values()) r();
      await Promise.all(workers.map((w) => w.stop()));
    },
  };
}

async function expectState(baton: Baton, job: Job, state: Job['state']): Promise<Job> {
  await expect.poll(async () => (await baton.getJob(job.id)).state, { timeout: 30_000 }).toBe(state);
  return baton.getJob(job.id);
}

/** The most runs open at once in `log`. */
function mostAtOnce(log: string[]): number {
  let open = 0;
  let most = 0;
  for (const entry of log) most = Math.max(most, (open += entry.startsWith('start:') ? 1 : -1));
  return most;
}

describe(`schedule overlap policies (${testDriver}, two workers, a 70 s job every 30 s for 190 s)`, () => {
  it('skip (the default): runs at 0, 90, 180, never two at once; ticks 30, 60, 120, 150 recorded skipped with an event', async () => {
    const f = await fleet('skip');
    expect((await f.a.schedules.get('every30')).overlap).toBe('skip');
    await f.tick(0);
    await f.started(0);
    for (const s of [30, 60]) await f.tick(s);
    await f.end(70, 0);
    await f.tick(90);
    await f.started(90);
    for (const s of [120, 150]) await f.tick(s);
    await f.end(160, 90);
    await f.tick(180);
    await f.started(180);
    await f.end(250, 180);
    expect(f.log).toEqual(['start:0', 'end:0', 'start:90', 'end:90', 'start:180', 'end:180']);
    const byTick = new Map((await f.jobs()).map((j) => [(j.scheduledFor!.getTime() - T0) / S, j]));
    expect([...byTick.keys()]).toEqual([0, 30, 60, 90, 120, 150, 180]);
    for (const s of [30, 60, 120, 150]) {
      expect(byTick.get(s), `tick ${s}`).toMatchObject({ state: 'cancelled', attempt: 0, cancelReason: 'skipped: the previous run of schedule "every30" is still queued or running (overlap skip)' });
    }
    expect(f.overlapped.sort((x, y) => x - y)).toEqual([30, 60, 120, 150]);
    await f.stop();
  });

  it('queue: at most one waits — ticks 30, 90, 150 are superseded while waiting; 0, 60, 120, 180 run one after another', async () => {
    const f = await fleet('queue');
    await f.tick(0);
    await f.started(0);
    await f.tick(30);
    await f.tick(60); // tick 30 was waiting: superseded
    expect(await expectState(f.a, await f.job(30), 'cancelled')).toMatchObject({ attempt: 0, cancelReason: expect.stringMatching(/^superseded by job \d+, a newer tick of schedule "every30" \(overlap queue\)$/) });
    await f.end(70, 0);
    await f.started(60);
    await f.tick(90);
    await f.tick(120);
    await expectState(f.a, await f.job(90), 'cancelled');
    await f.end(130, 60);
    await f.started(120);
    await f.tick(150);
    await f.tick(180);
    await expectState(f.a, await f.job(150), 'cancelled');
    await f.end(190, 120);
    await f.started(180);
    await f.end(250, 180);
    expect(f.log).toEqual(['start:0', 'end:0', 'start:60', 'end:60', 'start:120', 'end:120', 'start:180', 'end:180']);
    await f.stop();
  });

  it('allow: seven runs, up to three at once, all complete', async () => {
    const f = await fleet('allow');
    for (const s of [0, 30, 60]) {
      await f.tick(s);
      await f.started(s);
    }
    for (const [at, tick] of [[70, 0]] as const) await f.end(at, tick);
    await f.tick(90);
    await f.started(90);
    await f.end(100, 30);
    await f.tick(120);
    await f.started(120);
    await f.end(130, 60);
    await f.tick(150);
    await f.started(150);
    await f.end(160, 90);
    await f.tick(180);
    await f.started(180);
    for (const [at, tick] of [[190, 120], [220, 150], [250, 180]] as const) await f.end(at, tick);
    expect(f.log.filter((e) => e.startsWith('start:'))).toHaveLength(7);
    expect(mostAtOnce(f.log)).toBe(3);
    expect((await f.jobs()).map((j) => j.state)).toEqual(Array(7).fill('completed'));
    await f.stop();
  });

  it('cancelPrevious: each tick cancels the running one (its handler hears a CancelledError naming the new job; it ends cancelled), then runs', async () => {
    const f = await fleet('cancelPrevious');
    await f.tick(0);
    await f.started(0);
    for (const s of [30, 60, 90, 120, 150, 180]) {
      await f.tick(s);
      await f.started(s); // only once the previous run has ended: never two at once
      const previous = await expectState(f.a, await f.job(s - 30), 'cancelled');
      const newer = await f.job(s);
      expect(previous.cancelReason).toBe(`superseded by job ${newer.id}, a newer tick of schedule "every30" (overlap cancelPrevious)`);
      expect(f.heard.get(s - 30)).toBeInstanceOf(CancelledError);
      expect((f.heard.get(s - 30) as Error).message).toContain(`superseded by job ${newer.id}`);
    }
    await f.end(250, 180);
    expect(mostAtOnce(f.log)).toBe(1);
    expect(f.log).toEqual([0, 30, 60, 90, 120, 150].flatMap((s) => [`start:${s}`, `cancelled:${s}`]).concat(['start:180', 'end:180']));
    await f.stop();
  });
});
