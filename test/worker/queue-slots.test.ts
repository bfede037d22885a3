/**
 * Per-queue slots in one worker (`queues: { emails: 2, reports: 1 }`): each queue runs at
 * most its slots at once, so a backlog of long jobs in one queue never takes the slots of
 * another; `concurrency` caps the sum. Handlers are gated: the test decides when each ends.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, type Baton } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { collectEvents, until } from '../helpers/events.js';

/** Tasks whose runs wait until `finish(id)`; `running` counts the handlers running now per queue, `most` the most at once. */
function gatedTasks(names: string[]) {
  const gates = new Map<number, () => void>();
  const running = new Map<string, number>();
  const most = new Map<string, number>();
  let total = 0;
  let mostTotal = 0;
  const tasks = names.map((name) => defineTask(name, {
    handler: async (_: unknown, ctx) => {
      const queue = ctx.job.queue;
      running.set(queue, (running.get(queue) ?? 0) + 1);
      most.set(queue, Math.max(most.get(queue) ?? 0, running.get(queue)!));
      mostTotal = Math.max(mostTotal, ++total);
      await new Promise<void>((resolve) => gates.set(ctx.job.id, resolve));
      running.set(queue, running.get(queue)! - 1);
      total--;
    },
  }));
  const finish = (id: number) => {
    const open = gates.get(id);
    if (!open) throw new Error(`job ${id} is not running`);
    gates.delete(id);
    open();
  };
  return { tasks, gates, running: (q: string) => running.get(q) ?? 0, most: (q: string) => most.get(q) ?? 0, mostTotal: () => mostTotal, finish };
}

const runningIn = async (baton: Baton, queue: string) => (await baton.listJobs({ queue, state: 'running' })).length;

describe('per-queue slots in one worker', () => {
  it('with { emails: 2, reports: 1 } and a backlog of long reports, emails run while never more than 1 report runs', async () => {
    const baton = await openBaton();
    const g = gatedTasks(['report', 'email']);
    const [report, email] = g.tasks as [typeof g.tasks[0], typeof g.tasks[0]];
    // The reports come first: one pool of 3 slots would fill with them.
    const reports = await baton.enqueueMany(Array.from({ length: 4 }, () => ({ task: report, payload: null, options: { queue: 'reports' } })));
    const emails = await baton.enqueueMany(Array.from({ length: 4 }, () => ({ task: email, payload: null, options: { queue: 'emails' } })));
    const worker = baton.worker({ tasks: g.tasks, queues: { emails: 2, reports: 1 }, pollInterval: 60_000 });
    expect(worker.options.concurrency).toBe(3);
    const done = collectEvents(worker, 'job:completed', 8);
    await worker.start();
    await until(() => g.running('reports') === 1 && g.running('emails') === 2, 'one report and two emails to run');
    expect(await runningIn(baton, 'reports')).toBe(1);

    // Each email that ends gives its slot to the next email, never to a report.
    for (const job of emails) {
      await until(() => g.gates.has(job.id), `email ${job.id} to start`);
      g.finish(job.id);
    }
    await until(() => g.running('emails') === 0 && emails.every((j) => !g.gates.has(j.id)), 'the emails to end');
    expect(g.running('reports')).toBe(1);
    expect(await runningIn(baton, 'reports')).toBe(1);

    for (const job of reports) {
      await until(() => g.gates.has(job.id), `report ${job.id} to start`);
      expect(await runningIn(baton, 'reports')).toBe(1);
      g.finish(job.id);
    }
    const completed = await done;
    expect(completed.map((e) => e.job.id).sort((a, b) => a - b)).toEqual([...reports, ...emails].map((j) => j.id).sort((a, b) => a - b));
    expect(g.most('reports')).toBe(1);
    expect(g.most('emails')).toBe(2);
    await worker.stop();
  });

  it('concurrency caps the sum of the slots, and jobs claimed ahead (prefetch) start only into a free slot of their queue', async () => {
    const baton = await openBaton();
    const g = gatedTasks(['work']);
    const [work] = g.tasks;
    const jobs = await baton.enqueueMany(['a', 'a', 'a', 'b', 'b', 'b'].map((queue) => ({ task: work!, payload: null, options: { queue } })));
    const worker = baton.worker({ tasks: g.tasks, queues: { a: 2, b: 2 }, concurrency: 2, prefetch: 1, pollInterval: 60_000 });
    const done = collectEvents(worker, 'job:completed', 6);
    await worker.start();
    await until(() => g.gates.size === 2, 'two handlers to run');
    // Held: at most concurrency + prefetch = 3 jobs, at most slots + prefetch = 3 of one queue.
    expect(worker.running).toBeLessThanOrEqual(3);
    while (g.gates.size > 0) {
      const [id] = g.gates.keys();
      g.finish(id!);
      await until(() => !g.gates.has(id!) && (g.gates.size === 2 || worker.running <= 1), 'a slot to be refilled');
    }
    await done;
    expect(g.mostTotal()).toBe(2);
    for (const job of jobs) expect((await baton.getJob(job.id)).state).toBe('completed');
    await worker.stop();
  });

  it('a worker without queues serves default plus the queues its tasks name; an enqueue without a queue goes to the task\'s', async () => {
    const baton = await openBaton();
    const mail = defineTask('mail', { queue: 'emails', handler: () => 'sent' });
    const plain = defineTask('plain', { handler: () => 'done' });
    const [a, b, c] = await baton.enqueueMany([{ task: mail, payload: null }, { task: mail, payload: null, options: { queue: 'other' } }, { task: plain, payload: null }]);
    expect([a!.queue, b!.queue, c!.queue]).toEqual(['emails', 'other', 'default']);
    const worker = baton.worker({ tasks: [mail, plain], pollInterval: 60_000 });
    expect(worker.options.queues).toEqual(['default', 'emails']);
    const done = collectEvents(worker, 'job:completed', 2);
    await worker.start();
    expect((await done).map((e) => e.job.id).sort((x, y) => x - y)).toEqual([a!.id, c!.id]);
    expect((await baton.getJob(b!.id)).state).toBe('queued');
    await worker.stop();
  });
});
