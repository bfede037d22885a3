/**
 * `baton worker --queue NAME=SLOTS` (issue 30): per-queue slots from the command line.
 * The parse is a pure function (workerQueues); a refused value exits 2 with one line
 * naming the flag, before any database is opened.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { byWorkerFlag, workerQueues } from '../../src/cli/commands/worker.js';
import { UsageError } from '../../src/cli/options.js';
import { resolveWorkerOptions } from '../../src/worker/options.js';
import { defineTask } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { runCli, spawnCli } from '../helpers/cli.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));
const QUEUES = fileURLToPath(new URL('../fixtures/tasks-queues.ts', import.meta.url));
const task = defineTask('t', { handler: () => 1 });

describe('baton worker --queue NAME=SLOTS', () => {
  it('parses names as one pool, NAME=SLOTS as slots per queue (the total defaulting to their sum), and refuses a mix or a queue given twice', () => {
    expect(workerQueues(['emails', 'reports'])).toEqual(['emails', 'reports']);
    expect(workerQueues(['emails=10', 'reports=2'])).toEqual({ emails: 10, reports: 2 });
    expect(workerQueues(['a=b=3'])).toEqual({ 'a=b': 3 });
    // A value with "=" must end in whole-number slots: a typo is refused, not taken for a queue's name.
    for (const bad of ['a=b', 'emails=abc', 'emails=-1', 'emails=1.5', 'emails=', '=5']) {
      expect(() => workerQueues([bad]), bad).toThrow(/is not NAME=SLOTS/);
    }
    expect(() => workerQueues(['emails=10', 'reports'])).toThrow(UsageError);
    expect(() => workerQueues(['emails=10', 'reports'])).toThrow(/give slots for every queue or for none .* "reports" has none/);
    expect(() => workerQueues(['emails=10', 'emails=2'])).toThrow(/queue "emails" is given twice/);
    const options = resolveWorkerOptions({ tasks: [task], queues: workerQueues(['emails=10', 'reports=2']) });
    expect(options).toMatchObject({ queues: ['emails', 'reports'], queueSlots: { emails: 10, reports: 2 }, concurrency: 12 });
    expect(resolveWorkerOptions({ tasks: [task], queues: { emails: 10, reports: 2 }, concurrency: 4 }).concurrency).toBe(4);
  });

  it('a bad slot count is named by the flag and the queue', () => {
    let error: unknown;
    try {
      resolveWorkerOptions({ tasks: [task], queues: workerQueues(['emails=0']) });
    } catch (e) {
      error = byWorkerFlag(e);
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe('--queue emails: must be at least 1 (slots)');
  });

  it('the command refuses a mix and a zero slot count with exit 2 and one line, creating no database', { timeout: 120_000 }, async () => {
    const db = tempDatabase();
    const untouched = `sqlite:${join(db.dir, 'untouched.db')}`;
    const [mixed, zero] = await Promise.all([
      runCli(['worker', '--tasks', TASKS, '--queue', 'emails=10', '--queue', 'reports', '--database', untouched]),
      runCli(['worker', '--tasks', TASKS, '--queue', 'emails=0', '--database', untouched]),
    ]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr.trim()).toMatch(/^baton: --queue: give slots for every queue or for none/);
    expect(zero.code).toBe(2);
    expect(zero.stderr.trim()).toBe('baton: --queue emails: must be at least 1 (slots)');
    expect(existsSync(join(db.dir, 'untouched.db'))).toBe(false);
  });

  it('a worker with per-queue slots says so at start, stores the queues its module exports, and runs a job its task sends to its own queue', { timeout: 120_000 }, async () => {
    const db = tempDatabase();
    const worker = spawnCli(['worker', '--tasks', QUEUES, '--queue', 'emails=2', '--queue', 'reports=1', '--database', db.url, '--json']);
    const started = await worker.waitFor((m) => m.event === 'worker:started', 'worker:started');
    expect(started).toMatchObject({ queues: { emails: 2, reports: 1 }, concurrency: 3 });
    const baton = await openBaton({ database: db.url });
    const queues = await baton.queues.list();
    expect(queues.find((q) => q.name === 'emails')).toMatchObject({ concurrency: 3, sources: { concurrency: 'code' } });
    expect(queues.find((q) => q.name === 'reports')).toMatchObject({ rateLimit: { limit: 10, periodMs: 60_000 }, sources: { rateLimit: 'code' } });
    // `baton enqueue --tasks` knows the task's queue.
    const enqueued = await runCli(['enqueue', 'mail', '--tasks', QUEUES, '--payload', '{"to":"ada"}', '--database', db.url, '--json']);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const job = JSON.parse(enqueued.stdout) as { id: number; queue: string };
    expect(job.queue).toBe('emails');
    await worker.waitFor((m) => m.event === 'job:completed' && m.jobId === job.id, 'the mail job completed');
    worker.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  });
});
