import { describe, expect, it } from 'vitest';
import { ConfigError, NotFoundError, ValidationError, defineSchedule, defineTask, parseCadence, type Baton, type Clock, type Job, type Worker, type WorkerEvents } from 'baton-jobs';
import { z } from 'zod';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { rawQuery } from '../helpers/raw.js';
import { listFullJobs } from '../helpers/client.js';

const noop = defineTask('noop', { handler: async (payload: unknown) => payload as null });
const T = (iso: string) => Date.parse(iso);

/** A clock the test moves by hand. */
function manualClock(start: number): Clock & { set(ms: number): void } {
  let now = start;
  return { now: () => now, set: (ms) => (now = ms) };
}

/** Events of `name` a worker emits from now on. */
function record<K extends keyof WorkerEvents>(worker: Worker, name: K): WorkerEvents[K][] {
  const seen: WorkerEvents[K][] = [];
  worker.on(name, (payload) => seen.push(payload));
  return seen;
}

async function scheduledJobs(baton: Baton, name: string): Promise<Job[]> {
  return (await listFullJobs(baton, { limit: 1000 })).filter((j) => j.scheduleName === name).sort((a, b) => a.id - b.id);
}

describe('defining schedules', () => {
  it('refuses an invalid cron, an unknown time zone, both or neither of cron/every, a non-JSON payload: ConfigError at definition naming the schedule', () => {
    const cases: Array<[Parameters<typeof defineSchedule>[1], RegExp]> = [
      [{ cron: '61 * * * *', task: 'noop' }, /invalid cron "61 \* \* \* \*"/],
      [{ cron: '0 9 * * *', timezone: 'Mars/Olympus', task: 'noop' }, /unknown time zone "Mars\/Olympus"/],
      [{ cron: '* * * * *', every: 1000, task: 'noop' }, /not both/],
      [{ task: 'noop' }, /neither/],
      [{ every: 1000, task: 'noop', payload: { at: new Date() } }, /payload is not plain JSON/],
      [{ every: 1000, task: 'noop', catchUp: 'sometimes' as 'all' }, /catchUp/],
      [{ every: 1000, task: 'noop', queue: 'q\u0000' }, /queue: .*NUL/],
      [{ every: 1000, task: 'noop', queue: 'q\ud800' }, /queue: .*lone UTF-16 surrogate/],
      [{ every: 1000, task: 'noop\u0000' }, /task/],
      [{ every: 1000, task: '\udc00' }, /task/],
      [{ every: 1000, task: 'noop', timeout: 2_147_483_648 }, /timeout/],
    ];
    for (const [options, message] of cases) {
      let error: unknown;
      try {
        defineSchedule('nightly', options);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(options)).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain('schedule "nightly"');
      expect((error as Error).message).toMatch(message);
    }
  });

  it('refuses a schedule name with a NUL or a lone surrogate: ConfigError', () => {
    for (const name of ['nightly\u0000', 'nightly\ud800']) {
      expect(() => defineSchedule(name, { every: 1000, task: 'noop' }), JSON.stringify(name)).toThrow(ConfigError);
    }
  });

  it("a payload the task's schema rejects is a ValidationError when stored; nothing is stored", async () => {
    const typed = defineTask('typed', { schema: z.object({ n: z.number() }), handler: async () => null });
    const baton = await openBaton();
    await expect(baton.schedule('typed', { every: 60_000, task: typed, payload: { n: 'x' } })).rejects.toBeInstanceOf(ValidationError);
    expect(await baton.schedules.list()).toEqual([]);
  });
});

describe('ticks: exactly once across instances (compare-and-set with the enqueue)', () => {
  it('C13: a second instance that read the tick as due before the first advanced it reports skipped, never enqueued; 10 ticks → 10 jobs, 10 runs; (schedule, scheduledFor) unique', async () => {
    const db = tempDatabase();
    const clock = manualClock(T('2026-01-05T10:00:30Z'));
    const s1 = await openBaton({ database: db.url, clock });
    const s2 = await openBaton({ database: db.url, clock });
    // allow: the claimed runs only finish once w1 starts, after the last tick (overlap.test.ts has the other policies).
    await s1.schedule('minutely', { cron: '* * * * *', task: noop, payload: null, overlap: 'allow' });
    const w1 = s1.worker({ tasks: [noop], scheduler: true, pollInterval: 60_000 });
    const w2 = s2.worker({ tasks: [], scheduler: true });
    const enqueued1 = record(w1, 'schedule:enqueued');
    const enqueued2 = record(w2, 'schedule:enqueued');
    const skipped2 = record(w2, 'schedule:skipped');
    // S2 reads what is due, then (like a clock 500 ms behind) acts only after S1 has
    // enqueued the tick and the job has run.
    const store2 = s2.store as { scheduleDue: Baton['store']['scheduleDue'] };
    const read = store2.scheduleDue.bind(s2.store);
    const completed: number[] = [];
    w1.on('job:completed', (e) => completed.push(e.job.id));
    for (let k = 1; k <= 10; k++) {
      const tick = T('2026-01-05T10:00:00Z') + k * 60_000;
      clock.set(tick + 5);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let readDone!: () => void;
      const hasRead = new Promise<void>((resolve) => (readDone = resolve));
      store2.scheduleDue = async (params) => {
        const answer = await read(params);
        readDone();
        await gate;
        return answer;
      };
      const late = w2.loops.scheduler(tick + 5);
      await hasRead; // S2 has read the tick as due before S1 advances it (on a busy machine S1 could commit first)
      await w1.loops.scheduler(tick + 5);
      await w1.loops.fetch();
      release();
      await late;
    }
    await w1.start(); // lets the claimed runs finish writing
    const jobs = await scheduledJobs(s1, 'minutely');
    expect(jobs.map((j) => j.scheduledFor!.getTime())).toEqual(Array.from({ length: 10 }, (_, i) => T('2026-01-05T10:01:00Z') + i * 60_000));
    expect(enqueued1).toHaveLength(10);
    expect(enqueued2).toEqual([]);
    expect(skipped2.map((s) => s.scheduledFor.map((d) => d.getTime()))).toEqual(jobs.map((j) => [j.scheduledFor!.getTime()]));
    await w1.stop();
    expect(new Set(completed)).toEqual(new Set(jobs.map((j) => j.id)));
    // The tick's job cannot exist twice, whatever enqueues it (the finished job is in
    // jobs_finished on both drivers: a new live copy of it is refused all the same).
    const dup = await rawQuery(db, `INSERT INTO jobs (queue, task, payload, state, priority, run_at, max_attempts, created_at, schedule_name, scheduled_for) SELECT queue, task, payload, 'queued', priority, run_at, max_attempts, created_at, schedule_name, scheduled_for FROM jobs_all WHERE id = ?`, [jobs[0]!.id]).catch((e: unknown) => e);
    expect(String(dup)).toMatch(/unique|UNIQUE/);
    await w2.stop();
  });

  it('store: a compare-and-set with a stale expected next run advances nothing and enqueues nothing', async () => {
    const clock = manualClock(T('2026-01-05T10:00:30Z'));
    const baton = await openBaton({ clock });
    const info = await baton.schedule('s', { every: 60_000, task: 'noop' });
    const expected = info.nextRunAt!.getTime();
    const job = { queue: 'default', task: 'noop', payload: 'null', priority: 0, runAt: expected, maxAttempts: 3, timeoutMs: null, key: null, scheduledFor: expected };
    const args = { name: 's', expectedNextRunAt: expected, nextRunAt: expected + 60_000, jobs: [job], workerId: 'w', now: expected + 1 };
    const [a, b] = await Promise.all([baton.store.scheduleAdvance(args), baton.store.scheduleAdvance(args)]);
    expect([a.advanced, b.advanced].sort()).toEqual([false, true]);
    expect([...a.jobs, ...b.jobs]).toHaveLength(1);
    expect((await baton.schedules.get('s')).nextRunAt!.getTime()).toBe(expected + 60_000);
    expect((await baton.schedules.get('s')).lastRunAt!.getTime()).toBe(expected);
  });

  it('C16: re-declaring at boot (remove + add, three restarts) while another worker ticks gives one run per tick; two schedules on one queue due together give two jobs; upsert idempotent; list shows each once', async () => {
    const db = tempDatabase();
    const clock = manualClock(T('2026-01-05T10:18:10Z'));
    const p2 = await openBaton({ database: db.url, clock });
    const w2 = p2.worker({ tasks: [], scheduler: true });
    await w2.start();
    const nightly = defineSchedule('nightly', { cron: '19 * * * *', task: 'noop' });
    const reportsA = defineSchedule('reports-a', { cron: '0 * * * *', task: 'noop', queue: 'reports', payload: { k: 'a' } });
    const reportsB = defineSchedule('reports-b', { cron: '0 * * * *', task: 'noop', queue: 'reports', payload: { k: 'b' } });
    for (let boot = 0; boot < 3; boot++) {
      clock.set(T('2026-01-05T10:18:10Z') + boot * 15_000);
      const p1 = await openBaton({ database: db.url, clock });
      await p1.schedules.remove('nightly').catch((e: unknown) => expect(e).toBeInstanceOf(NotFoundError));
      const w1 = p1.worker({ tasks: [noop], schedules: [nightly, reportsA, reportsB] });
      await w1.start();
      await w1.stop();
      await p1.close();
    }
    const before = await p2.schedules.list();
    expect(before.map((s) => s.name)).toEqual(['nightly', 'reports-a', 'reports-b']);
    expect(before.find((s) => s.name === 'nightly')!.nextRunAt!.toISOString()).toBe('2026-01-05T10:19:00.000Z');
    // Idempotent: declaring again later does not move a pending tick.
    clock.set(T('2026-01-05T10:18:59Z'));
    await p2.schedule('reports-a', { cron: '0 * * * *', task: 'noop', queue: 'reports', payload: { k: 'a' } });
    expect((await p2.schedules.get('reports-a')).nextRunAt!.toISOString()).toBe('2026-01-05T11:00:00.000Z');

    const p1 = await openBaton({ database: db.url, clock });
    const w1 = p1.worker({ tasks: [], schedules: [nightly, reportsA, reportsB] });
    await w1.start();
    for (const at of ['2026-01-05T10:19:00.050Z', '2026-01-05T11:00:00.050Z']) {
      clock.set(T(at));
      await Promise.all([w1.loops.scheduler(T(at)), w2.loops.scheduler(T(at)), w2.loops.scheduler(T(at))]);
    }
    expect((await scheduledJobs(p2, 'nightly')).map((j) => j.scheduledFor!.toISOString())).toEqual(['2026-01-05T10:19:00.000Z']);
    const reports = (await listFullJobs(p2, { queue: 'reports', limit: 100 })).map((j) => [j.scheduleName, j.payload, j.scheduledFor!.toISOString()]).sort();
    expect(reports).toEqual([
      ['reports-a', { k: 'a' }, '2026-01-05T11:00:00.000Z'],
      ['reports-b', { k: 'b' }, '2026-01-05T11:00:00.000Z'],
    ]);
    expect((await p2.schedules.list()).map((s) => s.name)).toEqual(['nightly', 'reports-a', 'reports-b']);
    await w1.stop();
    await w2.stop();
  });

  it('a changed cadence moves the next run; trigger enqueues one job now without moving it; pause stops ticks; resume restarts from now; remove deletes', async () => {
    const clock = manualClock(T('2026-01-05T10:00:30Z'));
    const baton = await openBaton({ clock });
    const worker = baton.worker({ tasks: [], scheduler: true });
    await baton.schedule('s', { cron: '0 * * * *', task: 'noop', payload: { x: 1 } });
    expect((await baton.schedules.get('s')).nextRunAt!.toISOString()).toBe('2026-01-05T11:00:00.000Z');
    await baton.schedule('s', { cron: '*/15 * * * *', task: 'noop', payload: { x: 1 } });
    expect((await baton.schedules.get('s')).nextRunAt!.toISOString()).toBe('2026-01-05T10:15:00.000Z');

    const triggered = await baton.schedules.trigger('s');
    expect(triggered).toMatchObject({ task: 'noop', payload: { x: 1 }, scheduleName: 's', scheduledFor: null, state: 'queued' });
    expect((await baton.schedules.get('s')).nextRunAt!.toISOString()).toBe('2026-01-05T10:15:00.000Z');

    await baton.schedules.pause('s');
    expect((await baton.schedules.get('s')).paused).toBe(true);
    await worker.loops.scheduler(T('2026-01-05T10:15:01Z'));
    expect(await scheduledJobs(baton, 's')).toHaveLength(1);

    clock.set(T('2026-01-05T12:07:00Z'));
    await baton.schedules.resume('s');
    expect(await baton.schedules.get('s')).toMatchObject({ paused: false, nextRunAt: new Date('2026-01-05T12:15:00Z') });
    await worker.loops.scheduler(T('2026-01-05T12:15:00.010Z'));
    expect((await scheduledJobs(baton, 's')).map((j) => j.scheduledFor?.toISOString() ?? null)).toEqual([null, '2026-01-05T12:15:00.000Z']);

    await baton.schedules.remove('s');
    await expect(baton.schedules.get('s')).rejects.toBeInstanceOf(NotFoundError);
    await expect(baton.schedules.trigger('s')).rejects.toBeInstanceOf(NotFoundError);
    expect(await scheduledJobs(baton, 's')).toHaveLength(2);
  });
});

describe('a scheduler running late is not down (issue 31)', () => {
  it("0/59 * * * * * with passes 12 s apart (a slow store, a busy loop): the :59 tick seen 11.5 s late is enqueued, not dropped as missed", async () => {
    const clock = manualClock(T('2026-03-01T10:00:58Z'));
    const baton = await openBaton({ clock });
    const worker = baton.worker({ tasks: [], scheduler: true });
    await baton.schedule('edge', { cron: '0/59 * * * * *', task: 'noop', catchUp: 'latest' });
    const missed = record(worker, 'schedule:missed');
    await worker.loops.scheduler(T('2026-03-01T10:00:58Z')); // nothing due: the next tick is 10:00:59
    clock.set(T('2026-03-01T10:01:10.500Z'));
    await worker.loops.scheduler(T('2026-03-01T10:01:10.500Z'));
    expect((await scheduledJobs(baton, 'edge')).map((j) => j.scheduledFor!.toISOString())).toEqual(['2026-03-01T10:00:59.000Z', '2026-03-01T10:01:00.000Z']);
    expect(missed).toEqual([]);
    // A gap past 60 s is downtime: the catchUp policy applies (latest: the newest late tick only).
    clock.set(T('2026-03-01T10:03:30Z'));
    await worker.loops.scheduler(T('2026-03-01T10:03:30Z'));
    expect(missed.map((m) => m.missed)).toEqual([3]);
  });
});

describe('catch-up after downtime (C17)', () => {
  /** Declares F = every 5 min and Y = yearly at 10:02, then the whole cluster is down until 12:03. */
  async function downtime(catchUp: 'none' | 'latest' | 'all') {
    const clock = manualClock(T('2025-06-15T10:02:00Z'));
    const baton = await openBaton({ clock });
    const worker = baton.worker({ tasks: [], schedules: [
      defineSchedule('F', { cron: '*/5 * * * *', task: 'noop', catchUp }),
      defineSchedule('Y', { cron: '0 12 15 6 *', task: 'noop', catchUp }),
    ], scheduler: true });
    const missed = record(worker, 'schedule:missed');
    await worker.start();
    await worker.stop();
    clock.set(T('2025-06-15T12:03:00Z'));
    await worker.loops.scheduler(T('2025-06-15T12:03:00Z'));
    const ticks = async (name: string) => (await scheduledJobs(baton, name)).map((j) => j.scheduledFor!.toISOString());
    return { baton, missed, F: await ticks('F'), Y: await ticks('Y'), next: async (name: string) => (await baton.schedules.get(name)).nextRunAt!.toISOString() };
  }

  it('latest (default): one F job for 12:00 and one Y job; F resumes at 12:05, Y next year', async () => {
    const r = await downtime('latest');
    expect(r.F).toEqual(['2025-06-15T12:00:00.000Z']);
    expect(r.Y).toEqual(['2025-06-15T12:00:00.000Z']);
    expect(await r.next('F')).toBe('2025-06-15T12:05:00.000Z');
    expect(await r.next('Y')).toBe('2026-06-15T12:00:00.000Z');
    expect(r.missed.find((m) => m.schedule === 'F')).toMatchObject({ missed: 23, from: new Date('2025-06-15T10:05:00Z') });
  });

  it('none: no catch-up job, next runs in the future, and a schedule:missed event for each', async () => {
    const r = await downtime('none');
    expect([r.F, r.Y]).toEqual([[], []]);
    expect(await r.next('F')).toBe('2025-06-15T12:05:00.000Z');
    expect(await r.next('Y')).toBe('2026-06-15T12:00:00.000Z');
    expect(r.missed.map((m) => [m.schedule, m.missed, m.to.toISOString()]).sort()).toEqual([
      ['F', 24, '2025-06-15T12:00:00.000Z'],
      ['Y', 1, '2025-06-15T12:00:00.000Z'],
    ]);
  });

  it('all: the 24 missed F ticks in order and the one Y tick', async () => {
    const r = await downtime('all');
    expect(r.F).toEqual(parseCadence({ cron: '*/5 * * * *' }).between(new Date('2025-06-15T10:02:00Z'), new Date('2025-06-15T12:03:00Z')).map((d) => d.toISOString()));
    expect(r.F).toHaveLength(24);
    expect(r.Y).toEqual(['2025-06-15T12:00:00.000Z']);
  });

  it('every instance down for 5 ticks of an every-minute schedule: none 0 jobs, latest 1, all 5 (bounded by catchUpLimit)', async () => {
    for (const [catchUp, expected, limit] of [['none', 0, 100], ['latest', 1, 100], ['all', 5, 100], ['all', 3, 3]] as const) {
      const clock = manualClock(T('2026-02-01T00:00:10Z'));
      const baton = await openBaton({ clock });
      const worker = baton.worker({ tasks: [], scheduler: true });
      await baton.schedule('m', { every: 60_000, task: 'noop', catchUp, catchUpLimit: limit });
      // Down from 00:00:10 to 00:05:30: ticks 00:01 … 00:05 were missed.
      await worker.loops.scheduler(T('2026-02-01T00:05:30Z'));
      const jobs = await scheduledJobs(baton, 'm');
      expect(jobs, `${catchUp}/${limit}`).toHaveLength(expected);
      if (catchUp === 'latest') expect(jobs[0]!.scheduledFor!.toISOString()).toBe('2026-02-01T00:05:00.000Z');
      if (catchUp === 'all') expect(jobs.map((j) => j.scheduledFor!.toISOString())).toEqual(['00:01', '00:02', '00:03', '00:04', '00:05'].slice(5 - limit).map((t) => `2026-02-01T${t}:00.000Z`));
      expect((await baton.schedules.get('m')).nextRunAt!.toISOString()).toBe('2026-02-01T00:06:00.000Z');
    }
  });

  it('a short outage (90 s across one tick) still runs that tick once under latest and all', async () => {
    for (const catchUp of ['latest', 'all'] as const) {
      const clock = manualClock(T('2026-02-01T00:00:10Z'));
      const baton = await openBaton({ clock });
      const worker = baton.worker({ tasks: [], scheduler: true });
      await baton.schedule('m', { cron: '* * * * *', task: 'noop', catchUp });
      await worker.loops.scheduler(T('2026-02-01T00:01:40Z'));
      await worker.loops.scheduler(T('2026-02-01T00:01:41Z'));
      expect((await scheduledJobs(baton, 'm')).map((j) => j.scheduledFor!.toISOString())).toEqual(['2026-02-01T00:01:00.000Z']);
    }
  });
});
