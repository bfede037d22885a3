import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineTask, type Baton } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { spawnClient } from '../helpers/client.js';
import type { ChildHandle, ChildMessage } from '../helpers/child.js';

const send = defineTask('send', { handler: async (payload: { to: string }) => `sent to ${payload.to}` });

/** Claims every due `send` job directly through the store (no worker). */
const claimAll = (baton: Baton) =>
  baton.store.jobClaim({ workerId: 'test', tasks: ['send'], queues: ['default', 'other'], limit: 100, leaseMs: 60_000, now: Date.now() });

describe('key: idempotent enqueue', () => {
  it('while a queued job holds the key, enqueue returns that job (same id, first payload kept)', async () => {
    const baton = await openBaton();
    const enqueued: number[] = [];
    baton.on('job:enqueued', (e) => enqueued.push(e.job.id));
    const first = await baton.enqueue(send, { to: 'a' }, { key: 'welcome:1' });
    const second = await baton.enqueue(send, { to: 'b' }, { key: 'welcome:1', priority: 5 });
    expect(second.id).toBe(first.id);
    expect(second.payload).toEqual({ to: 'a' });
    expect(second.priority).toBe(0);
    expect(enqueued).toEqual([first.id]); // no second job:enqueued
    expect(await baton.listJobs()).toHaveLength(1);
  });

  it('the key is global: another task or queue with the same key also gets the existing job', async () => {
    const baton = await openBaton();
    const first = await baton.enqueue(send, { to: 'a' }, { key: 'k' });
    expect((await baton.enqueue('other-task', {}, { key: 'k', queue: 'other' })).id).toBe(first.id);
    expect(await baton.listJobs()).toHaveLength(1);
  });

  it('different keys, or no key, make different jobs', async () => {
    const baton = await openBaton();
    const a = await baton.enqueue(send, { to: 'a' }, { key: 'k1' });
    const b = await baton.enqueue(send, { to: 'a' }, { key: 'k2' });
    const c = await baton.enqueue(send, { to: 'a' });
    const d = await baton.enqueue(send, { to: 'a' });
    expect(new Set([a.id, b.id, c.id, d.id]).size).toBe(4);
  });

  it('while the job is running, enqueue still returns it', async () => {
    const baton = await openBaton();
    const first = await baton.enqueue(send, { to: 'a' }, { key: 'k' });
    expect((await claimAll(baton)).map((j) => j.id)).toEqual([first.id]);
    const again = await baton.enqueue(send, { to: 'b' }, { key: 'k' });
    expect(again.id).toBe(first.id);
    expect(again.state).toBe('running');
    expect(await baton.listJobs()).toHaveLength(1);
  });

  it('after the job completes (terminal), the same key creates a new job', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [send] });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const first = await baton.enqueue(send, { to: 'a' }, { key: 'k' });
    await done;
    expect((await baton.getJob(first.id)).state).toBe('completed');
    const doneAgain = waitForEvent(worker, 'job:completed', (e) => e.job.id !== first.id);
    const second = await baton.enqueue(send, { to: 'b' }, { key: 'k' });
    expect(second.id).not.toBe(first.id);
    expect(second.payload).toEqual({ to: 'b' });
    expect(second.key).toBe('k');
    expect((await doneAgain).result).toBe('sent to b');
    expect(await baton.listJobs()).toHaveLength(2);
  });

  it('after the job is cancelled or failed (terminal), the same key creates a new job', async () => {
    const baton = await openBaton();
    const first = await baton.enqueue(send, { to: 'a' }, { key: 'k' });
    expect((await baton.cancel(first.id)).outcome).toBe('cancelled');
    const second = await baton.enqueue(send, { to: 'b' }, { key: 'k' });
    expect(second.id).not.toBe(first.id);

    const [claimed] = await claimAll(baton);
    expect(claimed!.id).toBe(second.id);
    await baton.store.jobFail({ id: second.id, token: claimed!.leaseToken, error: { attempt: 1, time: Date.now(), message: 'x', stack: null }, retryAt: null, now: Date.now() });
    expect((await baton.getJob(second.id)).state).toBe('failed');
    const third = await baton.enqueue(send, { to: 'c' }, { key: 'k' });
    expect(new Set([first.id, second.id, third.id]).size).toBe(3);
  });

  it('a job awaiting retry (queued, attempt > 0) still holds its key', async () => {
    const baton = await openBaton();
    const first = await baton.enqueue(send, { to: 'a' }, { key: 'k' });
    const [claimed] = await claimAll(baton);
    await baton.store.jobFail({ id: first.id, token: claimed!.leaseToken, error: { attempt: 1, time: Date.now(), message: 'x', stack: null }, retryAt: Date.now() + 60_000, now: Date.now() });
    expect((await baton.getJob(first.id)).state).toBe('queued');
    expect((await baton.enqueue(send, { to: 'b' }, { key: 'k' })).id).toBe(first.id);
  });

  it('in one enqueueMany, a repeated key yields one job returned twice', async () => {
    const baton = await openBaton();
    const jobs = await baton.enqueueMany([
      { task: send, payload: { to: 'a' }, options: { key: 'k' } },
      { task: send, payload: { to: 'b' } },
      { task: send, payload: { to: 'c' }, options: { key: 'k' } },
    ]);
    expect(jobs[2]!.id).toBe(jobs[0]!.id);
    expect(jobs[1]!.id).not.toBe(jobs[0]!.id);
    expect(await baton.listJobs()).toHaveLength(2);
  });

  it('many concurrent enqueues with one key in one process make one job', async () => {
    const baton = await openBaton();
    const jobs = await Promise.all(Array.from({ length: 25 }, (_, i) => baton.enqueue(send, { to: `r${i}` }, { key: 'burst' })));
    expect(new Set(jobs.map((j) => j.id)).size).toBe(1);
    expect(await baton.listJobs()).toHaveLength(1);
  });

  it('concurrent enqueues of one key from two processes (10 rounds): exactly one job per key, both got its id', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url }); // migrates before the children start
    const rounds = 10;
    const barrier = join(db.dir, 'go');
    const clients: ChildHandle[] = [0, 1].map((n) =>
      spawnClient({ database: db.url, op: 'enqueue', task: 'send', payload: { to: `process ${n}` }, options: { key: 'race' }, barrier, rounds }),
    );
    const byRound = (round: number, type: string) => (m: ChildMessage) => m.type === type && m.round === round;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(clients.map((c) => c.waitFor(byRound(round, 'waiting'), `waiting ${round}`)));
      writeFileSync(`${barrier}.${round}`, '');
      const answers = await Promise.all(clients.map((c) => c.waitFor((m) => (m.type === 'result' || m.type === 'error') && m.round === round, `answer ${round}`)));
      for (const answer of answers) expect(answer, JSON.stringify(answer)).toMatchObject({ type: 'result' });
      const [a, b] = answers.map((m) => (m.value as { id: number; key: string }));
      expect(a!.key).toBe(`race-${round}`);
      expect(b!.id).toBe(a!.id);
    }
    for (const client of clients) expect((await client.exited).code).toBe(0);
    const jobs = await baton.listJobs({ limit: 1000 });
    expect(jobs).toHaveLength(rounds);
    expect(jobs.map((j) => j.key).sort()).toEqual(Array.from({ length: rounds }, (_, i) => `race-${i}`).sort());
  });
});
