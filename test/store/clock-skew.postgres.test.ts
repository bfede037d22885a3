/**
 * Clock skew on PostgreSQL: a host whose clock is 90 s ahead of the database's
 * (simulated by the store's injectable host clock) still takes its time from the
 * database — Store.clock is the host clock plus the offset measured at open — so
 * it neither starts a delayed job before its runAt nor rescues a healthy job whose
 * lease it believes expired, and it logs one warning about its clock. The test
 * process runs on the database's host, so `Date.now()` here is the database's time.
 */
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { defineSchedule, defineTask, type Baton, type Worker, type WorkerEvents } from 'baton-jobs';
import { Rescuer } from '../../src/maintenance/rescuer.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { openBaton, tempDatabase, testLogger } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

const SKEW_MS = 90_000;

/** A Baton on `db` whose host clock runs `skewMs` ahead, and the warn+ lines it logged. */
async function skewedBaton(db: { url: string }, skewMs = SKEW_MS): Promise<{ baton: Baton; logs: Array<Record<string, unknown>> }> {
  const url = new URL(db.url);
  const schema = url.searchParams.get('schema')!;
  url.searchParams.delete('schema');
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  const store = new PostgresStore(url.toString(), { schema, hostClock: { now: () => Date.now() + skewMs } });
  return { baton: await openBaton({ store, logger }), logs };
}

describe('a host whose clock is 90 s ahead of the database', () => {
  it('measures its offset at open, takes the database time as its clock, and logs one warning', async () => {
    const db = tempDatabase();
    await openBaton({ database: db.url }); // migrated by a host with the right time
    const { baton, logs } = await skewedBaton(db);
    const now = Date.now();
    expect(Math.abs(baton.clock.now() - now)).toBeLessThan(250);
    const warnings = logs.filter((l) => l.component === 'clock');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40 });
    expect(Math.abs((warnings[0]!.offsetMs as number) + SKEW_MS)).toBeLessThan(250);
    expect(warnings[0]!.msg).toMatch(/ahead of the database's/);
    // A re-measure agrees and does not warn again.
    const reading = await baton.store.clockSync();
    expect(Math.abs(reading.offsetMs + SKEW_MS)).toBeLessThan(250);
  });

  it('a host in time logs no clock warning', async () => {
    const db = tempDatabase();
    await openBaton({ database: db.url });
    const { baton, logs } = await skewedBaton(db, 0);
    expect(Math.abs(baton.clock.now() - Date.now())).toBeLessThan(250);
    expect(logs.filter((l) => l.component === 'clock')).toEqual([]);
  });

  it('does not start a delayed job before its runAt by the database clock', async () => {
    const db = tempDatabase();
    const client = await openBaton({ database: db.url, logger: testLogger() });
    const { baton: skewed } = await skewedBaton(db);
    const started: number[] = [];
    const stamp = defineTask('stamp', { handler: async () => void started.push(Date.now()) });
    const worker = skewed.worker({ tasks: [stamp], pollInterval: 50 });
    await worker.start();
    const job = await client.enqueue(stamp, undefined, { delay: 1500 });
    const done = await waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    // Without the offset the skewed worker saw the job as due 88.5 s ago and ran it at once.
    expect(started).toHaveLength(1);
    expect(started[0]!).toBeGreaterThanOrEqual(job.runAt.getTime() - 50);
    expect(done.job.startedAt!.getTime()).toBeGreaterThanOrEqual(job.runAt.getTime());
  });

  it("does not rescue another host's running job whose lease is healthy", async () => {
    const db = tempDatabase();
    const healthy = await openBaton({ database: db.url, logger: testLogger() });
    const { baton: skewed } = await skewedBaton(db);
    let release = () => undefined as void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = defineTask('held', { handler: async () => gate });
    const worker = healthy.worker({ tasks: [held], leaseTtl: 30_000 });
    await worker.start();
    const job = await healthy.enqueue(held, undefined);
    await waitForEvent(worker, 'job:claimed', (e) => e.job.id === job.id);

    // The skewed host's rescuer pass, as its worker would run it: by its own clock
    // the 30 s lease ran out 60 s ago; by the database's it has 30 s left.
    const rescuer = new Rescuer({
      store: skewed.store,
      clock: skewed.clock,
      logger: testLogger(),
      intervalMs: 60_000,
      onRescued: () => undefined,
      onError: () => undefined,
    });
    expect(await rescuer.runOnce()).toEqual({ requeued: [], failed: [], cancelled: [] });
    expect(await skewed.getJob(job.id)).toMatchObject({ state: 'running', attempt: 1, errors: [] });

    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    release();
    await completed;
    expect(await healthy.getJob(job.id)).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
  });
});

describe('a step of the host clock (issue 31)', () => {
  it('moves neither Baton\'s time nor its schedules: no tick early, none reported missed; the step is logged and the offset measured again at once', async () => {
    const realNow = Date.now.bind(Date);
    const lines: Array<Record<string, unknown>> = [];
    let stepSeen!: () => void;
    const stepLogged = new Promise<void>((resolve) => (stepSeen = resolve));
    const logger = pino({ level: 'warn' }, {
      write: (text: string) => {
        const line = JSON.parse(text) as Record<string, unknown>;
        lines.push(line);
        if (typeof line.stepMs === 'number') stepSeen();
      },
    });
    const baton = await openBaton({ database: tempDatabase().url, logger });
    const tick = defineTask('tick', { handler: async () => undefined });
    const worker = baton.worker({ tasks: [tick], schedules: [defineSchedule('every-second', { every: 1000, task: 'tick' })], scheduler: false });
    const missed = collectAll(worker, 'schedule:missed');
    const enqueued = collectAll(worker, 'schedule:enqueued');
    await worker.start();
    await worker.loops.scheduler();

    const step = vi.spyOn(Date, 'now');
    try {
      for (const offsetMs of [-3_600_000, 3_600_000]) {
        step.mockImplementation(() => realNow() + offsetMs); // the host's wall clock, stepped an hour
        expect(Math.abs(baton.clock.now() - realNow())).toBeLessThan(1000);
        await worker.loops.scheduler();
        await worker.loops.scheduler(); // a pass after the step, however long the first took
      }
      await stepLogged;
    } finally {
      step.mockRestore();
    }
    await worker.loops.scheduler();
    expect(missed).toEqual([]);
    const ticks = enqueued.flatMap((e) => e.scheduledFor.map((d) => d.getTime()));
    // Never an hour early (nor late): every tick enqueued is due by the real time.
    for (const t of ticks) expect(Math.abs(t - realNow())).toBeLessThan(30_000);
    const stepLine = lines.find((l) => typeof l.stepMs === 'number')!;
    expect(Math.abs(Math.abs(stepLine.stepMs as number) - 3_600_000)).toBeLessThan(5_000);
    expect(stepLine.msg).toMatch(/wall clock stepped (forward|back) by \d+ ms; measuring the offset/);
    await worker.stop();
  });
});

/** Every `name` event of `worker` from now on. */
function collectAll<K extends 'schedule:missed' | 'schedule:enqueued'>(worker: Worker, name: K): Array<WorkerEvents[K]> {
  const seen: Array<WorkerEvents[K]> = [];
  worker.on(name, (event) => void seen.push(event));
  return seen;
}
