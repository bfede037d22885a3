import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { LeaseLostError, ShutdownError, defineService, type ServiceContext } from 'baton-jobs';
import { spawnWorker, type ChildMessage } from '../helpers/child.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

describe('services in one process', () => {
  it('due when never run; stores lastRunAt and the returned next time; null → not again until triggered; paused → not run', async () => {
    const baton = await openBaton();
    const seen: Array<Date | null> = [];
    let answer: Date | null = new Date(Date.now() - 1);
    const svc = defineService('report', { run: async ({ lastRunAt }) => (seen.push(lastRunAt), answer), pollInterval: 50, maxWait: 60_000 });
    const worker = baton.worker({ tasks: [], services: [svc] });
    await worker.loops.service('report');
    const first = await baton.services.get('report');
    expect(first).toMatchObject({ failures: 0, lastError: null, paused: false, holder: null, nextRunAt: answer });
    expect(seen).toEqual([null]);
    // Its next time has passed: due again, and it is told when the last run started.
    answer = null;
    await worker.loops.service('report');
    expect(seen).toEqual([null, first.lastRunAt]);
    expect((await baton.services.get('report')).nextRunAt).toBeNull();
    // null: not due until triggered.
    expect(await worker.loops.service('report')).toBe(60_000);
    expect(seen).toHaveLength(2);
    await baton.services.trigger('report');
    await baton.services.pause('report');
    await worker.loops.service('report');
    expect(seen).toHaveLength(2);
    await baton.services.resume('report');
    await worker.loops.service('report');
    expect(seen).toHaveLength(3);
  });

  it('a throw is stored as the last error and retried after the backoff; success resets the failures', async () => {
    let now = Date.parse('2026-03-01T00:00:00Z');
    const baton = await openBaton({ clock: { now: () => now } });
    let calls = 0;
    const svc = defineService('flaky', {
      run: async () => {
        calls++;
        if (calls === 1) throw new Error('upstream down');
        return null;
      },
      backoff: { type: 'fixed', delay: 200 },
    });
    const worker = baton.worker({ tasks: [], services: [svc] });
    const failed = waitForEvent(worker, 'service:failed', (e) => e.service !== 'baton:pruner');
    await worker.loops.service('flaky');
    expect((await failed).message).toBe('upstream down');
    const row = await baton.services.get('flaky');
    expect(row).toMatchObject({ lastError: 'upstream down', failures: 1, lastRunAt: null });
    expect(row.nextRunAt!.getTime() - row.lastErrorAt!.getTime()).toBe(200);
    await worker.loops.service('flaky'); // not due yet
    expect(calls).toBe(1);
    now = row.nextRunAt!.getTime() - 1;
    await worker.loops.service('flaky');
    expect(calls).toBe(1);
    now = row.nextRunAt!.getTime();
    await worker.loops.service('flaky');
    expect(calls).toBe(2);
    expect(await baton.services.get('flaky')).toMatchObject({ failures: 0, nextRunAt: null });
  });

  it('a lease taken over mid-run (expired, acquired by another owner) aborts the run with LeaseLostError and its outcome is not stored', async () => {
    const baton = await openBaton();
    let reason: unknown;
    const svc = defineService('stolen', {
      leaseTtl: 300,
      run: async ({ signal, fencingToken }: ServiceContext) => {
        // Another instance, whose clock is past our lease's expiry, takes the lease.
        const taken = await baton.store.leaseAcquire({ name: 'service:stolen', owner: 'other', ttlMs: 60_000, now: Date.now() + 1000 });
        expect(taken).toMatchObject({ acquired: true, token: fencingToken + 1 });
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        reason = signal.reason;
        return new Date(Date.now() + 3_600_000);
      },
    });
    const worker = baton.worker({ tasks: [], services: [svc] });
    const aborted = waitForEvent(worker, 'service:aborted', (e) => e.service !== 'baton:pruner');
    await worker.loops.service('stolen');
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect((await aborted).reason).toBeInstanceOf(LeaseLostError);
    expect(await baton.services.get('stolen')).toMatchObject({ lastRunAt: null, nextRunAt: null, failures: 0 });
    // Its release was fenced: the new holder keeps the lease.
    expect(await baton.store.leaseGet({ name: 'service:stolen' })).toMatchObject({ owner: 'other', token: 2 });
  });

  it('graceful stop aborts a running service with ShutdownError and releases its lease at once; the outcome is not stored; logged as a routine stop, one service key', async () => {
    const lines: string[] = [];
    const baton = await openBaton({ logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }) });
    let reason: unknown;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const svc = defineService('long', {
      run: async ({ signal }) => {
        started();
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        reason = signal.reason;
        return new Date(Date.now() + 3_600_000);
      },
    });
    const worker = baton.worker({ tasks: [], services: [svc] });
    await worker.start();
    await running;
    expect((await baton.services.get('long')).holder).toBe(worker.id);
    await worker.stop();
    expect(reason).toBeInstanceOf(ShutdownError);
    expect(await baton.store.leaseGet({ name: 'service:long' })).toMatchObject({ owner: null });
    expect(await baton.services.get('long')).toMatchObject({ lastRunAt: null, nextRunAt: null, holder: null });
    const stopped = lines.filter((line) => line.includes("service run stopped by the worker's shutdown") && line.includes('"service":"long"'));
    expect(stopped).toHaveLength(1);
    expect(stopped[0]!.match(/"service":/g)).toHaveLength(1);
    expect(JSON.parse(stopped[0]!)).toMatchObject({ level: 30, service: 'long' });
    expect(lines.filter((line) => line.includes('"level":40') && line.includes('"service":"long"'))).toEqual([]);
  });
});

describe('services across processes', () => {
  it('a service returning "in 2 s" runs again about 2 s later on whichever instance wins; never on two at once; null stops it until triggered', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const services = [
      // Leases long enough that a busy machine's stall cannot abort a run mid-way.
      { name: 'every2s', runMs: 300, nextInMs: 2000, leaseTtl: 30_000, pollInterval: 100, maxWait: 300 },
      { name: 'once', runMs: 50, nextInMs: null, leaseTtl: 30_000, pollInterval: 100, maxWait: 300 },
    ];
    const workers = await Promise.all([0, 1, 2].map(() => spawnWorker({ database: db.url, worker: { queues: ['none'] }, services } as never)));
    const runs = () =>
      workers
        .flatMap((w) => w.messages.filter((m) => m.type === 'service').map((m) => ({ ...m, pid: w.pid }) as unknown as ChildMessage & { at: number; service: string; phase: string }))
        .sort((a, b) => (a.at as number) - (b.at as number));
    const ended = (name: string) => runs().filter((m) => m.service === name && m.phase === 'end');
    // Whichever process reports the 4th end wakes its waiter (each waiter re-checks on its own child's lines).
    await Promise.race(workers.map((w) => w.waitFor(() => ended('every2s').length >= 4, '4 runs of every2s')));
    const every = runs().filter((m) => m.service === "every2s");
    // Start/end pairs alternate: no two runs overlap, whichever process ran them.
    const phases = every.map((m) => m.phase);
    expect(phases.slice(0, 8)).toEqual(['start', 'end', 'start', 'end', 'start', 'end', 'start', 'end']);
    for (let i = 2; i < 8; i += 2) {
      const gap = (every[i]!.at as number) - (every[i - 1]!.at as number);
      // Never before its time (how much later depends on the machine's load).
      expect(gap).toBeGreaterThanOrEqual(1990);
    }
    // 'once' returned null: it ran exactly once so far; a trigger runs it again.
    expect(ended('once')).toHaveLength(1);
    expect((await baton.services.get('once')).nextRunAt).toBeNull();
    await baton.services.trigger('once');
    await Promise.race(workers.map((w) => w.waitFor(() => ended('once').length === 2, 'the triggered run')));
    const list = await baton.services.list();
    expect(list.map((s) => s.name)).toEqual(['baton:pruner', 'every2s', 'once']);
  });
});
