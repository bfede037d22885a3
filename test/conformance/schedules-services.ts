import { describe, expect, it } from 'vitest';
import type { ScheduleDefinitionRow, Store } from '../../src/store/store.js';
import { get, ms, T0, type Harness } from './harness.js';

const MINUTE = 60_000;

/** A schedule every minute (`every`), task `tick`. */
function definition(overrides: Partial<ScheduleDefinitionRow> = {}): ScheduleDefinitionRow {
  return {
    name: 's',
    cron: null,
    everyMs: MINUTE,
    timezone: 'UTC',
    task: 'tick',
    payload: '{"from":"schedule"}',
    queue: 'default',
    priority: 0,
    maxAttempts: 3,
    timeoutMs: null,
    catchUp: 'latest',
    catchUpLimit: 10,
    overlap: 'allow',
    ...overrides,
  };
}

/** scheduleAdvance's params for one tick at `tick`, moving next_run_at to tick + 1 minute. */
function advanceOne(name: string, tick: number, workerId = 'w1') {
  const { task, payload, queue, priority, maxAttempts, timeoutMs } = definition();
  return {
    name,
    expectedNextRunAt: tick,
    nextRunAt: tick + MINUTE,
    jobs: [{ queue, task, payload, priority, runAt: tick, maxAttempts, timeoutMs, key: null, scheduledFor: tick }],
    workerId,
    now: tick + 5,
  };
}

const upsert = (store: Store, overrides: Partial<ScheduleDefinitionRow> = {}, nextRunAt: number | null = T0, now = T0 - MINUTE) =>
  store.scheduleUpsert({ schedule: definition(overrides), nextRunAt, now });

/** Recurring schedules and scheduled services. */
export function scheduleServiceTests(h: Harness): void {
  describe('schedules', () => {
    it('scheduleUpsert creates the row (created: true) with every definition field, unpaused', async () => {
      const { store } = await h.setup();
      const def = definition({ name: 'full', cron: '*/5 * * * *', everyMs: null, timezone: 'Europe/Paris', priority: 3, maxAttempts: 9, timeoutMs: 1234, catchUp: 'all', catchUpLimit: 4 });
      const { schedule, created } = await store.scheduleUpsert({ schedule: def, nextRunAt: T0 + 5 * MINUTE, now: T0 });
      expect(created).toBe(true);
      expect(schedule).toEqual({ ...def, paused: false, nextRunAt: T0 + 5 * MINUTE, lastRunAt: null, lastWorker: null, createdAt: T0, updatedAt: T0 });
      expect(await store.scheduleGet({ name: 'full' })).toEqual(schedule);
      expect(await store.scheduleGet({ name: 'missing' })).toBeNull();
    });

    it('re-declaring keeps next_run_at and paused, overwrites the definition (created: false)', async () => {
      const { store } = await h.setup();
      await upsert(store);
      await store.scheduleSetPaused({ name: 's', paused: true, nextRunAt: null, now: T0 - 1 });
      const again = await store.scheduleUpsert({ schedule: definition({ task: 'tock', payload: '[2]', queue: 'q2', priority: 7 }), nextRunAt: T0 + 30_000, now: T0 });
      expect(again.created).toBe(false);
      expect(again.schedule).toMatchObject({ task: 'tock', payload: '[2]', queue: 'q2', priority: 7, nextRunAt: T0, paused: true, createdAt: T0 - MINUTE, updatedAt: T0 });
    });

    it.each([
      ['every', { everyMs: 2 * MINUTE }],
      ['cron', { cron: '0 * * * *', everyMs: null }],
      ['timezone', { timezone: 'Asia/Tokyo' }],
    ])('a changed cadence (%s) takes the new next_run_at', async (_name, change) => {
      const { store } = await h.setup();
      await upsert(store);
      const again = await store.scheduleUpsert({ schedule: definition(change), nextRunAt: T0 + 7 * MINUTE, now: T0 });
      expect(again).toMatchObject({ created: false, schedule: { ...change, nextRunAt: T0 + 7 * MINUTE } });
    });

    it('scheduleAdvance applies the jobs\' concurrency key and strategy in its transaction (overlap skip: a tick while one is live ends cancelled at once)', async () => {
      const { store } = await h.setup();
      await upsert(store, { overlap: 'skip' });
      const keyed = (tick: number) => {
        const p = advanceOne('s', tick);
        return { ...p, jobs: p.jobs.map((j) => ({ ...j, concurrencyKey: 'baton:schedule:s', concurrencyLimit: 1, concurrencyStrategy: 'dropNewest' as const })) };
      };
      const first = await store.scheduleAdvance(keyed(T0));
      expect(first.jobs.map((j) => [j.state, j.concurrencyKey, j.concurrencyLimit])).toEqual([['queued', 'baton:schedule:s', 1]]);
      const second = await store.scheduleAdvance(keyed(T0 + MINUTE));
      expect(second.advanced).toBe(true);
      expect(second.jobs).toHaveLength(1);
      expect(second.jobs[0]).toMatchObject({ state: 'cancelled', cancelReason: 'skipped: the previous run of schedule "s" is still queued or running (overlap skip)' });
      expect((await store.scheduleGet({ name: 's' }))!.overlap).toBe('skip');
    });

    it('scheduleList: every schedule by name', async () => {
      const { store } = await h.setup();
      for (const name of ['b', 'c', 'a']) await upsert(store, { name });
      await store.scheduleSetPaused({ name: 'c', paused: true, nextRunAt: null, now: T0 });
      expect((await store.scheduleList({})).map((s) => [s.name, s.paused])).toEqual([
        ['a', false],
        ['b', false],
        ['c', true],
      ]);
    });

    it('scheduleDue: unpaused schedules due at now, by next_run_at, at most `limit`; earliest of every unpaused one', async () => {
      const { store } = await h.setup();
      await upsert(store, { name: 'late' }, T0 + 10);
      await upsert(store, { name: 'b' }, T0 - 5);
      await upsert(store, { name: 'a' }, T0 - 5);
      await upsert(store, { name: 'first' }, T0 - 100);
      await upsert(store, { name: 'paused' }, T0 - 1000);
      await upsert(store, { name: 'never' }, null);
      await store.scheduleSetPaused({ name: 'paused', paused: true, nextRunAt: null, now: T0 });

      const due = await store.scheduleDue({ now: T0, limit: 10 });
      expect(due.due.map((s) => s.name)).toEqual(['first', 'a', 'b']);
      expect(due.earliest).toBe(T0 - 100);
      expect((await store.scheduleDue({ now: T0, limit: 2 })).due.map((s) => s.name)).toEqual(['first', 'a']);
      expect(await store.scheduleDue({ now: T0, limit: 0 })).toEqual({ due: [], earliest: T0 - 100 });
      expect(await store.scheduleDue({ now: T0 - 101, limit: 10 })).toEqual({ due: [], earliest: T0 - 100 });
      expect((await store.scheduleDue({ now: T0 + 10, limit: 10 })).due.map((s) => s.name)).toEqual(['first', 'a', 'b', 'late']);
    });

    it('scheduleDue with nothing scheduled: earliest null', async () => {
      const { store } = await h.setup();
      expect(await store.scheduleDue({ now: T0, limit: 10 })).toEqual({ due: [], earliest: null });
      await upsert(store, { name: 'never' }, null);
      expect(await store.scheduleDue({ now: T0, limit: 10 })).toEqual({ due: [], earliest: null });
    });

    it('scheduleAdvance: the compare-and-set moves next_run_at and enqueues the ticks in one step', async () => {
      const { store } = await h.setup();
      await upsert(store);
      const result = await store.scheduleAdvance(advanceOne('s', T0, 'w-7'));
      expect(result.advanced).toBe(true);
      expect(result.jobs).toHaveLength(1);
      const [job] = result.jobs;
      expect(job).toMatchObject({ task: 'tick', payload: { from: 'schedule' }, state: 'queued', scheduleName: 's' });
      expect(ms(job!.scheduledFor)).toBe(T0);
      expect(ms(job!.runAt)).toBe(T0);
      expect(await get(store, job!.id)).toEqual(job);
      expect(await store.scheduleGet({ name: 's' })).toMatchObject({ nextRunAt: T0 + MINUTE, lastRunAt: T0, lastWorker: 'w-7', updatedAt: T0 + 5 });

      expect(job!.traceContext).toBeNull();

      // A stale expectation (the tick was taken) changes nothing.
      expect(await store.scheduleAdvance(advanceOne('s', T0, 'w-8'))).toEqual({ advanced: false, jobs: [] });
      expect(await store.scheduleGet({ name: 's' })).toMatchObject({ nextRunAt: T0 + MINUTE, lastWorker: 'w-7' });
      expect(await store.jobList({ limit: 10 })).toHaveLength(1);
    });

    it('scheduleAdvance stores each job\'s trace context (the tick\'s span)', async () => {
      const { store } = await h.setup();
      await upsert(store);
      const trace = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
      const params = advanceOne('s', T0);
      const result = await store.scheduleAdvance({ ...params, jobs: params.jobs.map((j) => ({ ...j, traceContext: JSON.stringify(trace) })) });
      expect(result.jobs.map((j) => j.traceContext)).toEqual([trace]);
      expect((await get(store, result.jobs[0]!.id)).traceContext).toEqual(trace);
    });

    it('scheduleAdvance of several ticks (catch-up): lastRunAt is the latest tick; a tick already enqueued is skipped', async () => {
      const { store } = await h.setup();
      await upsert(store);
      const one = advanceOne('s', T0);
      const ticks = [T0, T0 + MINUTE, T0 + 2 * MINUTE];
      const first = await store.scheduleAdvance({ ...one, nextRunAt: T0 + 3 * MINUTE, jobs: ticks.slice(0, 2).map((t) => ({ ...one.jobs[0]!, runAt: t, scheduledFor: t })) });
      expect(first.jobs.map((j) => ms(j.scheduledFor))).toEqual(ticks.slice(0, 2));
      expect((await store.scheduleGet({ name: 's' }))?.lastRunAt).toBe(T0 + MINUTE);

      const second = await store.scheduleAdvance({
        ...one,
        expectedNextRunAt: T0 + 3 * MINUTE,
        nextRunAt: T0 + 4 * MINUTE,
        jobs: ticks.map((t) => ({ ...one.jobs[0]!, runAt: t, scheduledFor: t })),
      });
      expect(second.advanced).toBe(true);
      expect(second.jobs.map((j) => ms(j.scheduledFor))).toEqual([T0 + 2 * MINUTE]);
      expect(await store.jobList({ limit: 10 })).toHaveLength(3);
    });

    it('scheduleAdvance stores each job as given (NewJob), its key included', async () => {
      const { store } = await h.setup();
      await upsert(store);
      const one = advanceOne('s', T0);
      const { jobs } = await store.scheduleAdvance({ ...one, jobs: [{ ...one.jobs[0]!, key: 'tick-key', priority: 2, maxAttempts: 4, timeoutMs: 100 }] });
      expect(jobs[0]).toMatchObject({ key: 'tick-key', priority: 2, maxAttempts: 4, timeoutMs: 100 });
      expect((await get(store, jobs[0]!.id)).key).toBe('tick-key');
    });

    it('scheduleAdvance without jobs (ticks skipped) moves next_run_at and keeps lastRunAt', async () => {
      const { store } = await h.setup();
      await upsert(store);
      expect(await store.scheduleAdvance({ ...advanceOne('s', T0), jobs: [] })).toEqual({ advanced: true, jobs: [] });
      expect(await store.scheduleGet({ name: 's' })).toMatchObject({ nextRunAt: T0 + MINUTE, lastRunAt: null, lastWorker: null });
    });

    it('scheduleAdvance on a paused or unknown schedule → not advanced, nothing enqueued', async () => {
      const { store } = await h.setup();
      await upsert(store);
      await store.scheduleSetPaused({ name: 's', paused: true, nextRunAt: null, now: T0 });
      expect(await store.scheduleAdvance(advanceOne('s', T0))).toEqual({ advanced: false, jobs: [] });
      expect(await store.scheduleAdvance(advanceOne('missing', T0))).toEqual({ advanced: false, jobs: [] });
      expect(await store.jobList({ limit: 10 })).toEqual([]);
    });

    it('two store instances advancing the same tick at once: exactly one advances, the tick is enqueued once', async () => {
      const { store, another } = await h.setup();
      const other = await another();
      for (let round = 0; round < 10; round++) await upsert(store, { name: `s${round}` });
      for (let round = 0; round < 10; round++) {
        const name = `s${round}`;
        const answers = await Promise.all([store.scheduleAdvance(advanceOne(name, T0, 'one')), other.scheduleAdvance(advanceOne(name, T0, 'two'))]);
        expect(answers.filter((a) => a.advanced), name).toHaveLength(1);
        expect(answers.flatMap((a) => a.jobs), name).toHaveLength(1);
        const winner = answers[0]!.advanced ? 'one' : 'two';
        expect(await store.scheduleGet({ name })).toMatchObject({ nextRunAt: T0 + MINUTE, lastWorker: winner });
      }
      expect(await store.jobList({ limit: 100 })).toHaveLength(10);
    });

    it('scheduleTrigger enqueues one job from the definition now, next_run_at unchanged; unknown → null', async () => {
      const { store } = await h.setup();
      await upsert(store, { priority: 4, maxAttempts: 2, timeoutMs: 900, queue: 'q' }, T0 + 10 * MINUTE);
      const job = await store.scheduleTrigger({ name: 's', now: T0 + 1 });
      expect(job).toMatchObject({ task: 'tick', queue: 'q', payload: { from: 'schedule' }, priority: 4, maxAttempts: 2, timeoutMs: 900, state: 'queued', scheduleName: 's', scheduledFor: null });
      expect(ms(job!.runAt)).toBe(T0 + 1);
      const twice = await store.scheduleTrigger({ name: 's', now: T0 + 2 });
      expect(twice!.id).not.toBe(job!.id);
      expect((await store.scheduleGet({ name: 's' }))?.nextRunAt).toBe(T0 + 10 * MINUTE);
      expect(await store.scheduleTrigger({ name: 'missing', now: T0 })).toBeNull();
    });

    it('scheduleSetPaused: pausing stops it being due; resuming sets next_run_at; unknown → false', async () => {
      const { store } = await h.setup();
      await upsert(store);
      expect(await store.scheduleSetPaused({ name: 's', paused: true, nextRunAt: null, now: T0 + 1 })).toBe(true);
      expect(await store.scheduleGet({ name: 's' })).toMatchObject({ paused: true, updatedAt: T0 + 1 });
      expect((await store.scheduleDue({ now: T0 + MINUTE, limit: 10 })).due).toEqual([]);
      expect(await store.scheduleSetPaused({ name: 's', paused: false, nextRunAt: T0 + 3 * MINUTE, now: T0 + 2 })).toBe(true);
      expect(await store.scheduleGet({ name: 's' })).toMatchObject({ paused: false, nextRunAt: T0 + 3 * MINUTE, updatedAt: T0 + 2 });
      expect((await store.scheduleDue({ now: T0 + 3 * MINUTE, limit: 10 })).due.map((s) => s.name)).toEqual(['s']);
      expect(await store.scheduleSetPaused({ name: 'missing', paused: true, nextRunAt: null, now: T0 })).toBe(false);
    });

    it('scheduleRemove deletes the schedule and keeps its jobs; unknown → false', async () => {
      const { store } = await h.setup();
      await upsert(store);
      const { jobs } = await store.scheduleAdvance(advanceOne('s', T0));
      expect(await store.scheduleRemove({ name: 's' })).toBe(true);
      expect(await store.scheduleGet({ name: 's' })).toBeNull();
      expect(await store.scheduleRemove({ name: 's' })).toBe(false);
      expect(await get(store, jobs[0]!.id)).toMatchObject({ scheduleName: 's' });
    });
  });

  describe('services', () => {
    const lease = async (store: Store, name: string, owner: string, now: number, ttlMs = 10_000) => {
      const got = await store.leaseAcquire({ name: `service:${name}`, owner, ttlMs, now });
      expect(got.acquired).toBe(true);
      return (got as { token: number }).token;
    };
    const record = (store: Store, token: number, p: { lastRunAt: number; nextRunAt: number | null; error: string | null; now: number }) =>
      store.serviceRecord({ name: 'svc', leaseName: 'service:svc', token, ...p });

    it('serviceEnsure creates a never-run, unpaused service once and returns it either way', async () => {
      const { store } = await h.setup();
      const created = await store.serviceEnsure({ name: 'svc', now: T0 });
      expect(created).toEqual({ name: 'svc', paused: false, lastRunAt: null, nextRunAt: null, lastError: null, lastErrorAt: null, failures: 0, updatedAt: T0, holder: null, holderUntil: null });
      await store.serviceSetPaused({ name: 'svc', paused: true, now: T0 + 1 });
      expect(await store.serviceEnsure({ name: 'svc', now: T0 + 2 })).toMatchObject({ paused: true, updatedAt: T0 + 1 });
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ paused: true });
      expect(await store.serviceGet({ name: 'missing' })).toBeNull();
    });

    it('serviceRecord under the lease: success stores the run and resets failures; a failure keeps lastRunAt', async () => {
      const { store } = await h.setup();
      await store.serviceEnsure({ name: 'svc', now: T0 });
      const token = await lease(store, 'svc', 'a', T0);
      expect(await record(store, token, { lastRunAt: T0 + 1, nextRunAt: T0 + MINUTE, error: null, now: T0 + 2 })).toBe(true);
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ lastRunAt: T0 + 1, nextRunAt: T0 + MINUTE, failures: 0, lastError: null, updatedAt: T0 + 2 });

      expect(await record(store, token, { lastRunAt: T0 + 100, nextRunAt: T0 + 5000, error: 'boom', now: T0 + 101 })).toBe(true);
      expect(await record(store, token, { lastRunAt: T0 + 200, nextRunAt: T0 + 9000, error: 'boom again', now: T0 + 201 })).toBe(true);
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ lastRunAt: T0 + 1, nextRunAt: T0 + 9000, failures: 2, lastError: 'boom again', lastErrorAt: T0 + 201 });

      expect(await record(store, token, { lastRunAt: T0 + 300, nextRunAt: null, error: null, now: T0 + 301 })).toBe(true);
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ lastRunAt: T0 + 300, nextRunAt: null, failures: 0 });
    });

    it('serviceRecord with a lost lease (taken over, or released) writes nothing', async () => {
      const { store } = await h.setup();
      await store.serviceEnsure({ name: 'svc', now: T0 });
      const stale = await lease(store, 'svc', 'a', T0, 1000);
      const fresh = await lease(store, 'svc', 'b', T0 + 1000, 1000);
      const before = await store.serviceGet({ name: 'svc' });
      expect(await record(store, stale, { lastRunAt: T0 + 1, nextRunAt: T0 + MINUTE, error: null, now: T0 + 1001 })).toBe(false);
      expect(await record(store, stale, { lastRunAt: T0 + 1, nextRunAt: T0 + MINUTE, error: 'late', now: T0 + 1001 })).toBe(false);
      expect(await store.serviceGet({ name: 'svc' })).toEqual(before);

      expect(await store.leaseRelease({ name: 'service:svc', owner: 'b', token: fresh })).toBe(true);
      expect(await record(store, fresh, { lastRunAt: T0 + 1, nextRunAt: T0 + MINUTE, error: null, now: T0 + 1002 })).toBe(false);
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ lastRunAt: null, nextRunAt: null });
      // The lease of another service does not count.
      const otherToken = await lease(store, 'other', 'b', T0 + 2000);
      expect(await store.serviceRecord({ name: 'svc', leaseName: 'service:svc', token: otherToken + 1000, lastRunAt: T0, nextRunAt: null, error: null, now: T0 + 2000 })).toBe(false);
      expect(await store.serviceRecord({ name: 'missing', leaseName: 'service:other', token: otherToken, lastRunAt: T0, nextRunAt: null, error: null, now: T0 + 2000 })).toBe(false);
    });

    it('serviceList: every service by name, with the holder of its lease while live at now', async () => {
      const { store } = await h.setup();
      for (const name of ['b', 'a', 'c']) await store.serviceEnsure({ name, now: T0 });
      await lease(store, 'a', 'w-a', T0, 1000);
      await lease(store, 'c', 'w-c', T0, 5000);
      const holders = async (now: number) => (await store.serviceList({ now })).map((s) => [s.name, s.holder, s.holderUntil]);
      expect(await holders(T0 + 1)).toEqual([
        ['a', 'w-a', T0 + 1000],
        ['b', null, null],
        ['c', 'w-c', T0 + 5000],
      ]);
      expect(await holders(T0 + 1000)).toEqual([
        ['a', null, null],
        ['b', null, null],
        ['c', 'w-c', T0 + 5000],
      ]);
    });

    it('serviceSetPaused and serviceTrigger; unknown → false', async () => {
      const { store } = await h.setup();
      await store.serviceEnsure({ name: 'svc', now: T0 });
      expect(await store.serviceSetPaused({ name: 'svc', paused: true, now: T0 + 1 })).toBe(true);
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ paused: true, updatedAt: T0 + 1 });
      expect(await store.serviceSetPaused({ name: 'svc', paused: false, now: T0 + 2 })).toBe(true);
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ paused: false, updatedAt: T0 + 2 });
      expect(await store.serviceTrigger({ name: 'svc', now: T0 + 3 })).toBe(true);
      expect(await store.serviceGet({ name: 'svc' })).toMatchObject({ nextRunAt: T0 + 3, updatedAt: T0 + 3 });
      expect(await store.serviceSetPaused({ name: 'missing', paused: true, now: T0 })).toBe(false);
      expect(await store.serviceTrigger({ name: 'missing', now: T0 })).toBe(false);
    });
  });
}
