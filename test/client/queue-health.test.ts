/**
 * A queue at a glance (issue 30, items 4 and 10): each queue's latency (the age of its
 * oldest due job) and the tasks whose due jobs no live worker serves, through
 * `baton.queues.list()`, `GET /api/queues` and the metrics; the worker registry's tasks;
 * and the one-time warning for an enqueue by name of a task no live worker registers.
 * Both drivers; the clock is injected.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { createMetrics } from 'baton-jobs/metrics';
import { FLEET_TASKS_REFRESH_MS } from '../../src/client/unserved-task-warning.js';
import { openBaton } from '../helpers/db.js';

/** A clock the test moves. */
function testClock() {
  const clock = { t: Date.now(), now: () => clock.t };
  return clock;
}

/** A live worker row (no background loops): `queues` served, `tasks` registered, for an hour of the clock. */
const fakeWorker = (id: string, queues: string[], tasks: string[] | null, now: number) => ({
  worker: { id, host: 'h', pid: 1, startedAt: now, concurrency: 1, queues, tasks, running: [] }, ttlMs: 3_600_000, now,
});

/** Lets pending promise and I/O callbacks run: what follows a background read's answer. */
const settle = async (rounds = 20) => {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Waits (event-loop turns, no timer) until `done()`; fails after 10 s. */
async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await settle();
}

describe('queue latency and unserved tasks', () => {
  it('a worker registers the tasks it serves', async () => {
    const baton = await openBaton();
    const send = defineTask('send', { handler: async () => null });
    const other = defineTask('other', { handler: async () => null });
    const worker = baton.worker({ tasks: [send, other], queues: ['mail'], concurrency: 1 });
    await worker.start();
    expect((await baton.listWorkers()).map((w) => [w.queues, [...w.tasks!].sort()])).toEqual([[['mail'], ['other', 'send']]]);
    await worker.stop();
  });

  it('list(), GET /api/queues and the metrics: latency of the oldest due job, live workers, and tasks no worker of the queue serves', async () => {
    const clock = testClock();
    const baton = await openBaton({ clock });
    const t0 = clock.t;
    await baton.store.workerUpsert(fakeWorker('w1', ['mail'], ['send'], t0));
    await baton.enqueue('bounce', {}, { queue: 'mail' });
    clock.t += 1000;
    await baton.enqueue('bounce', {}, { queue: 'mail', priority: -5 });
    await baton.enqueue('send', {}, { queue: 'mail' });
    await baton.enqueue('encode', {}, { queue: 'video', delay: 60_000 }); // due at t0 + 61 s
    clock.t += 500;
    const byName = async () => Object.fromEntries((await baton.queues.list()).map((q) => [q.name, q]));
    let queues = await byName();
    expect(queues.mail).toMatchObject({ latencyMs: 1500, workers: 1, unservedTasks: [{ task: 'bounce', jobs: 2 }] });
    expect(queues.video).toMatchObject({ latencyMs: 0, workers: 0, unservedTasks: [] }); // nothing due yet

    clock.t = t0 + 62_000;
    queues = await byName();
    expect(queues.mail).toMatchObject({ latencyMs: 62_000, unservedTasks: [{ task: 'bounce', jobs: 2 }] });
    expect(queues.video).toMatchObject({ latencyMs: 1000, workers: 0, unservedTasks: [{ task: 'encode', jobs: 1 }] });

    const app = createHttpApp(baton);
    const api = (await (await app.request('/api/queues')).json()) as { queues: Array<Record<string, unknown>> };
    expect(api.queues.find((q) => q.queue === 'video')).toMatchObject({ latencyMs: 1000, workers: 0, unservedTasks: [{ task: 'encode', jobs: 1 }] });

    const metrics = createMetrics(baton);
    const text = await metrics.text();
    metrics.close();
    expect(text).toContain('baton_queue_latency_seconds{queue="mail"} 62');
    expect(text).toContain('baton_queue_latency_seconds{queue="video"} 1');
    expect(text).toContain('baton_queue_unserved_jobs{queue="mail",task="bounce"} 2');
    expect(text).toContain('baton_queue_unserved_jobs{queue="video",task="encode"} 1');
    expect(text).not.toContain('task="send"');

    // A worker that registers the tasks: nothing unserved; a worker of an older version (no tasks recorded) serves anything.
    await baton.store.workerUpsert(fakeWorker('w2', ['mail'], ['bounce'], clock.t));
    await baton.store.workerUpsert(fakeWorker('w3', ['video'], null, clock.t));
    queues = await byName();
    expect([queues.mail!.unservedTasks, queues.video!.unservedTasks, queues.mail!.workers]).toEqual([[], [], 2]);
  });

  it('an enqueue by name of a task no live worker registers logs one warning per name, from a read of the registry at most every few seconds', async () => {
    const clock = testClock();
    const warnings: Array<{ task: string; msg: string }> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as { task: string; msg: string }) });
    const ops: string[] = [];
    const baton = await openBaton({ clock, logger }, (op) => ops.push(op));
    const reads = () => ops.filter((op) => op === 'workerList').length;

    // No live worker at all: no warning (workers often start after the first enqueues).
    await baton.enqueue('typo', {});
    await until(() => reads() === 1, 'the registry read');
    expect(warnings).toEqual([]);

    await baton.store.workerUpsert(fakeWorker('w1', ['default'], ['send'], clock.t));
    // Within the refresh period the answer read before is reused: no read, still no warning.
    await baton.enqueue('typo', {});
    await settle();
    expect([reads(), warnings]).toEqual([1, []]);

    clock.t += FLEET_TASKS_REFRESH_MS;
    await baton.enqueueMany([{ task: 'typo' }, { task: 'send' }, { task: 'typo' }, { task: 'other' }]);
    for (let i = 0; i < 10; i++) await baton.enqueue('typo', {});
    await until(() => warnings.length === 2, 'the warnings');
    expect(reads()).toBe(2);
    expect(warnings.map((w) => w.task).sort()).toEqual(['other', 'typo']);
    expect(warnings.find((w) => w.task === 'typo')!.msg).toBe('no live worker serves task "typo": its jobs wait until a worker that registers it starts (known to the fleet: "send")');

    // Once per name: later enqueues of it neither warn nor read.
    clock.t += FLEET_TASKS_REFRESH_MS;
    await baton.enqueue('typo', {});
    await settle();
    expect([reads(), warnings.length]).toEqual([2, 2]);
  });
});
