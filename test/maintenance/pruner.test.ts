/**
 * The pruner of finished jobs (src/maintenance/pruner.ts) and its settings
 * (retention.ts), on both drivers: defaults per state with the exact cutoff, queue
 * and task overrides and their precedence, keep-N in bounded batches, live jobs never
 * touched, bad settings refused before anything is written, the service run by one
 * process at a time. Passes run through `worker.loops.prune(now)` with an injected
 * time; finished jobs are made at exact times through the store.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, defineTask, type Baton, type WorkerEvents } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { createMetrics } from 'baton-jobs/metrics';
import { finished } from '../conformance/retention.js';
import { get, insert, running, T0 } from '../conformance/harness.js';
import { spawnWorker, type ChildHandle, type ChildMessage } from '../helpers/child.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

const DAY = 86_400_000;
const noop = defineTask('t', { handler: async () => null });

/** Ids of every job left, ascending. */
async function ids(baton: Baton): Promise<number[]> {
  return (await baton.store.jobList({ limit: 1000 })).map((j) => j.id).sort((a, b) => a - b);
}

/** Every `jobs:pruned` event of `worker` from now on. */
function recordPruned(worker: { on(e: 'jobs:pruned', l: (p: WorkerEvents['jobs:pruned']) => void): () => void }) {
  const seen: Array<WorkerEvents['jobs:pruned']> = [];
  worker.on('jobs:pruned', (e) => seen.push(e));
  return seen;
}

describe('pruner', () => {
  it('defaults: completed and cancelled kept 1 day, failed 7 days; removed once older than that (a job 1 ms short of the age, or exactly at it, is kept); queued and running jobs untouched', async () => {
    const baton = await openBaton();
    const store = baton.store;
    const now = T0 + 30 * DAY;
    const queued = await insert(store, { task: 'live' });
    const run = await running(store, { task: 'live-run' });
    const kept = [
      await finished(store, 'completed', now - DAY + 1), // 1 ms before the cutoff age
      await finished(store, 'completed', now - DAY), // exactly 1 day old: not older than retention
      await finished(store, 'cancelled', now - DAY),
      await finished(store, 'failed', now - DAY - 1),
      await finished(store, 'failed', now - 7 * DAY),
    ];
    const gone = [
      await finished(store, 'completed', now - DAY - 1),
      await finished(store, 'cancelled', now - DAY - 1),
      await finished(store, 'failed', now - 7 * DAY - 1),
      await finished(store, 'completed', now - 20 * DAY),
    ];
    const worker = baton.worker({ tasks: [noop] });
    const events = recordPruned(worker);
    expect(await worker.loops.prune(now)).toEqual({ deleted: 4, batches: 3, aborted: false });
    expect(await ids(baton)).toEqual([queued.id, run.id, ...kept.map((j) => j.id)].sort((a, b) => a - b));
    expect(gone.every((j) => j.id > run.id)).toBe(true);
    expect(events).toEqual([
      expect.objectContaining({ deleted: 2, state: 'completed', queue: null, task: null, keep: null, finishedBefore: new Date(now - DAY) }),
      expect.objectContaining({ deleted: 1, state: 'cancelled', finishedBefore: new Date(now - DAY) }),
      expect.objectContaining({ deleted: 1, state: 'failed', finishedBefore: new Date(now - 7 * DAY) }),
    ]);
    expect((await get(store, run.id)).state).toBe('running');
    // A second pass at the same time finds nothing.
    expect(await worker.loops.prune(now)).toEqual({ deleted: 0, batches: 0, aborted: false });
  });

  it('per queue and per task: a task setting wins over its queue, a queue over the worker default; false keeps forever; 0 removes at the next pass', async () => {
    const baton = await openBaton();
    const store = baton.store;
    const now = T0 + 400 * DAY;
    const report = defineTask('report', { handler: async () => null, retention: { completed: 30 * DAY, failed: false } });
    const at = (days: number) => now - days * DAY - 1;
    const jobs = {
      // default queue: worker default completed 2 days
      defaultOld: await finished(store, 'completed', at(2)),
      defaultNew: await finished(store, 'completed', at(1)),
      // audit: completed kept forever, failed default
      auditOld: await finished(store, 'completed', at(365), { queue: 'audit' }),
      auditFailed: await finished(store, 'failed', at(7), { queue: 'audit' }),
      // fast: completed removed at once
      fastNow: await finished(store, 'completed', now - 1, { queue: 'fast' }),
      fastAtNow: await finished(store, 'completed', now, { queue: 'fast' }),
      // report task: 30 days for completed in every queue (even fast), failed forever
      reportFast: await finished(store, 'completed', at(29), { queue: 'fast', task: 'report' }),
      reportFastOld: await finished(store, 'completed', at(30), { queue: 'fast', task: 'report' }),
      reportAudit: await finished(store, 'completed', at(30), { queue: 'audit', task: 'report' }),
      reportFailed: await finished(store, 'failed', at(365), { task: 'report' }),
    };
    const worker = baton.worker({ tasks: [noop, report], retention: { completed: 2 * DAY, queues: { audit: { completed: false }, fast: { completed: 0 } } } });
    const result = await worker.loops.prune(now);
    const gone = ['defaultOld', 'auditFailed', 'fastNow', 'reportFastOld', 'reportAudit'] as const;
    expect(result.deleted).toBe(gone.length);
    const left = new Set(await ids(baton));
    for (const [name, job] of Object.entries(jobs)) expect(left.has(job.id), name).toBe(!(gone as readonly string[]).includes(name));
  });

  it('keep-N per queue: only the newest N finished jobs stay, deleted oldest first in batches of batchSize, one event per batch; other queues untouched', async () => {
    const baton = await openBaton();
    const store = baton.store;
    const now = T0 + DAY;
    const capped = [];
    for (let i = 0; i < 13; i++) capped.push(await finished(store, i % 3 === 0 ? 'failed' : 'completed', T0 + i, { queue: 'capped' }));
    const others = [await finished(store, 'completed', T0, { queue: 'other' }), await finished(store, 'completed', T0, { queue: 'other' })];
    const live = await insert(store, { queue: 'capped', task: 'live' });
    const worker = baton.worker({ tasks: [noop], retention: { completed: false, failed: false, batchSize: 3, queues: { capped: { keep: 5 } } } });
    const events = recordPruned(worker);
    expect(await worker.loops.prune(now)).toEqual({ deleted: 8, batches: 3, aborted: false });
    expect(events.map((e) => [e.deleted, e.queue, e.keep, e.state])).toEqual([[3, 'capped', 5, null], [3, 'capped', 5, null], [2, 'capped', 5, null]]);
    expect(await ids(baton)).toEqual([...capped.slice(8).map((j) => j.id), ...others.map((j) => j.id), live.id].sort((a, b) => a - b));
  });

  it.each([
    [{ completed: -1 }, 'worker option retention.completed: must be false (keep forever) or an integer number of ms'],
    [{ failed: Number.NaN }, 'retention.failed: must be false'],
    [{ cancelled: 1.5 }, 'retention.cancelled: must be false'],
    [{ completed: Number.POSITIVE_INFINITY }, 'retention.completed: must be false'],
    [{ completed: 315_360_000_001 }, 'retention.completed: must be false'],
    [{ completed: '1d' }, 'retention.completed: must be false'],
    [{ complete: 1000 }, 'complete'],
    [{ queues: { q: { keep: -1 } } }, 'retention.queues.q.keep: must be at least 0'],
    [{ queues: { q: { keep: 2.5 } } }, 'retention.queues.q.keep: must be an integer'],
    [{ queues: { q: { keep: 1_000_001 } } }, 'retention.queues.q.keep: must be at most 1000000'],
    [{ queues: { q: { failed: -5 } } }, 'retention.queues.q.failed: must be false'],
    // A queue name the store could not keep: named, escaped so the message stays one clean line.
    [{ queues: { 'a\u0000b': { completed: 1 } } }, 'retention.queues."a\\u0000b": not a queue name: a queue name contains a NUL character'],
    [{ queues: { ['q'.repeat(201)]: { completed: 1 } } }, 'not a queue name: a queue name has 1..200 characters'],
    [{ queues: { '\ud800': { completed: 1 } } }, 'retention.queues."\\ud800": not a queue name: a queue name contains a lone UTF-16 surrogate'],
    [{ batchSize: 0 }, 'retention.batchSize: must be at least 1'],
    [{ interval: 5 }, 'retention.interval: must be at least 10 ms'],
    [{ interval: 1e12 }, 'retention.interval: must be at most 2147483647 ms'],
    [{ queues: { '': { completed: 1 } } }, 'retention.queues."": not a queue name: a queue name has 1..200 characters'],
    [true, 'retention'],
  ])('refuses retention %j with a ConfigError naming the field; nothing is written', async (retention, message) => {
    const baton = await openBaton();
    const job = await finished(baton.store, 'completed', T0);
    let error: unknown;
    try {
      baton.worker({ tasks: [noop], retention: retention as never });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(message);
    expect(await ids(baton)).toEqual([job.id]);
    expect(await baton.store.serviceList({ now: T0 })).toEqual([]);
  });

  it('a task refuses a bad retention with a ConfigError naming the task and field', () => {
    expect(() => defineTask('bad', { handler: async () => null, retention: { failed: -5 } })).toThrow(/task "bad" option retention\.failed: must be false/);
    expect(() => defineTask('bad', { handler: async () => null, retention: { done: 5 } as never })).toThrow(ConfigError);
  });

  it('retention: false runs no pruner in this worker; the built-in name is refused for a user service', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [noop], retention: false });
    expect(() => worker.loops.prune(T0)).toThrow(/retention: false/);
    await worker.start();
    await worker.stop();
    expect(await baton.store.serviceList({ now: Date.now() })).toEqual([]);
    const { defineService } = await import('baton-jobs');
    expect(() => baton.worker({ tasks: [noop], services: [defineService('baton:pruner', { run: async () => null })] })).toThrow(/built-in pruner/);
  });

  it('a started worker prunes through its service (listed as baton:pruner) and counts baton_jobs_pruned_total', async () => {
    const baton = await openBaton();
    const metrics = createMetrics(baton);
    const done = await finished(baton.store, 'completed', Date.now() - 10);
    const worker = baton.worker({ tasks: [noop], retention: { completed: 0 } });
    const pruned = waitForEvent(worker, 'jobs:pruned');
    const ran = waitForEvent(worker, 'service:completed', (e) => e.service === 'baton:pruner');
    await worker.start();
    expect(await pruned).toMatchObject({ deleted: 1, state: 'completed' });
    await ran;
    expect(await ids(baton)).not.toContain(done.id);
    expect((await baton.store.serviceList({ now: Date.now() })).map((s) => s.name)).toEqual(['baton:pruner']);
    expect(await metrics.text()).toMatch(/^baton_jobs_pruned_total\{queue="\*",state="completed"\} 1$/m);
    metrics.close();
  });

  it('pausing the service baton:pruner (here through the HTTP API, name URL-encoded) stops pruning fleet-wide until it is resumed', async () => {
    const baton = await openBaton();
    const job = await finished(baton.store, 'completed', Date.now() - 10);
    const worker = baton.worker({ tasks: [noop], retention: { completed: 0 } });
    await baton.store.serviceEnsure({ name: 'baton:pruner', now: Date.now() });
    const app = createHttpApp(baton);
    const pause = await app.request('/api/services/baton%3Apruner/pause', { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(pause.status).toBe(200);
    expect(((await pause.json()) as { service: { name: string; paused: boolean } }).service).toMatchObject({ name: 'baton:pruner', paused: true });
    await worker.loops.service('baton:pruner');
    expect(await ids(baton)).toEqual([job.id]);
    await baton.services.resume('baton:pruner');
    await worker.loops.service('baton:pruner');
    expect(await ids(baton)).toEqual([]);
  });

  it('three processes: exactly one prunes at a time (the service intervals they report never overlap) and together they remove every expired job', async () => {
    const db = tempDatabase();
    const setup = await openBaton({ database: db.url });
    const total = 300;
    await setup.store.jobInsertMany({ jobs: Array.from({ length: total }, () => ({ queue: 'default', task: 't', payload: '{}', priority: 0, runAt: T0, maxAttempts: 1, timeoutMs: null, key: null })), now: T0 });
    const list = await setup.store.jobList({ limit: 1000 });
    const past = Date.now() - 1000;
    for (const job of list) await setup.store.jobCancel({ id: job.id, reason: null, now: past });
    await setup.close();

    const worker = { queues: ['none'], retention: { cancelled: 0, interval: 20, batchSize: 25 } };
    const children: ChildHandle[] = await Promise.all([0, 1, 2].map(() => spawnWorker({ database: db.url, worker })));
    const deleted = () => children.flatMap((c) => c.messages).filter((m) => m.name === 'jobs:pruned').reduce((sum, m) => sum + (m.deleted as number), 0);
    const runs = () => children.flatMap((c) => c.messages.filter((m) => m.type === 'event' && m.service === 'baton:pruner' && m.name === 'service:completed'));
    // Wait until every job is gone and the service ran at least 9 times in all.
    await Promise.all(children.map((c) => c.waitFor(() => deleted() >= total && runs().length >= 9, 'pruning done')));
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => c.exited));
    expect(deleted()).toBe(total);

    // Each process's runs: [started, ended] pairs, in order.
    const intervals: Array<{ pid: number; start: number; end: number; pruned: ChildMessage[] }> = [];
    for (const c of children) {
      const service = c.messages.filter((m) => m.type === 'event' && (m.service === 'baton:pruner' || m.name === 'jobs:pruned'));
      let open: (typeof intervals)[number] | undefined;
      for (const m of service) {
        if (m.name === 'service:started') open = { pid: c.pid, start: m.at as number, end: Number.POSITIVE_INFINITY, pruned: [] };
        else if (m.name === 'jobs:pruned') {
          expect(open, 'a batch outside a run').toBeDefined();
          open!.pruned.push(m);
        } else if (open) {
          open.end = m.at as number;
          intervals.push(open);
          open = undefined;
        }
      }
      if (open) intervals.push(open);
    }
    intervals.sort((a, b) => a.start - b.start);
    expect(intervals.length).toBeGreaterThanOrEqual(9);
    for (let i = 1; i < intervals.length; i++) {
      expect(intervals[i]!.start, `run ${i} (pid ${intervals[i]!.pid}) began before run ${i - 1} (pid ${intervals[i - 1]!.pid}) ended`).toBeGreaterThanOrEqual(intervals[i - 1]!.end);
    }
    expect(intervals.flatMap((r) => r.pruned).reduce((sum, m) => sum + (m.deleted as number), 0)).toBe(total);
  });
});
