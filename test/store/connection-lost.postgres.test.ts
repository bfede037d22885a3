/**
 * A pool connection that ends inside a transaction (the server restarted, the network
 * cut) fails the call it carried, and nothing else: found by the soak (issue 34), where a
 * worker process died of pg's unhandled 'error' event when the nemesis restarted the
 * database or cut the worker off while a transaction (here a `send`) had its connection
 * checked out of the pool. The first test holds the job's row lock in a session of its own,
 * so the send's transaction waits in the database; then it terminates the send's backend.
 * The second terminates every backend of a process again and again while its worker runs
 * jobs that write progress and checkpoints (a crash seen on a database restart whose path
 * was not pinned down: every pool client now keeps an error listener for life).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTask, StoreError } from 'baton-jobs';
import { openBaton, postgresUrl, tempDatabase } from '../helpers/db.js';
import { until } from '../helpers/events.js';

const task = defineTask('lost-conn', { handler: async () => null });

const admins: pg.Client[] = [];
afterEach(async () => {
  for (const admin of admins.splice(0)) await admin.end();
});

describe('a pool connection lost inside a transaction (PostgreSQL)', () => {
  it('fails that call with StoreError, raises no unhandled error event, and the next call works', async () => {
    const db = tempDatabase();
    const app = `lost_${randomBytes(4).toString('hex')}`;
    const baton = await openBaton({ database: `${db.url}&application_name=${app}` });
    const schema = new URL(db.url).searchParams.get('schema')!;
    const job = await baton.enqueue(task, null);
    const admin = new pg.Client({ connectionString: postgresUrl });
    admins.push(admin);
    await admin.connect();
    await admin.query('BEGIN');
    await admin.query(`SELECT id FROM "${schema}".jobs WHERE id = $1 FOR UPDATE`, [job.id]);

    const sending = baton.send(job.id, 'go', { n: 1 });
    const blocked = async () => (await admin.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [app])).rows;
    await until(async () => (await blocked()).length === 1, "the send's transaction to wait for the row lock");
    // Handled before the termination: the send can reject before the admin's answer arrives.
    const failed = expect(sending).rejects.toThrow(StoreError);
    await admin.query('SELECT pg_terminate_backend($1)', [(await blocked())[0]!.pid]);
    await failed;
    await admin.query('ROLLBACK');

    expect(await baton.send(job.id, 'go', { n: 2 })).toMatchObject({ jobId: job.id, created: true });
  });
});

describe('pool connections terminated under a running worker (PostgreSQL)', () => {
  it('every backend of the process terminated again and again while jobs write progress and checkpoints: no unhandled error event, every job completes', async () => {
    const db = tempDatabase();
    const app = `lost_${randomBytes(4).toString('hex')}`;
    const baton = await openBaton({ database: `${db.url}&application_name=${app}` });
    const busy = defineTask('lost-busy', {
      handler: async (n: number, ctx) => {
        for (let i = 1; i <= 5; i++) {
          ctx.progress(i, 5);
          await ctx.saveCheckpoint({ i }).catch(() => undefined);
        }
        return n;
      },
    });
    const jobs = await baton.enqueueMany(Array.from({ length: 150 }, (_, n) => ({ task: busy, payload: n })));
    const worker = baton.worker({ tasks: [busy], concurrency: 10, pollInterval: 100, heartbeatInterval: 200 });
    await worker.start();
    const admin = new pg.Client({ connectionString: postgresUrl });
    admins.push(admin);
    await admin.connect();
    const terminated: number[] = [];
    const done = async () => (await baton.queueCounts()).filter((c) => c.state === 'completed').reduce((n, c) => n + c.count, 0) === jobs.length;
    for (let round = 0; round < 20 && !(await done().catch(() => false)); round++) {
      const { rows } = await admin.query<{ n: number }>('SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1', [app]);
      terminated.push(rows[0]!.n);
      await new Promise((resolve) => setTimeout(resolve, 25 + round * 5));
    }
    await until(async () => done().catch(() => false), 'every job completed after the terminations');
    expect(terminated.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    await worker.stop();
  });
});
