/**
 * Graceful shutdown with PostgreSQL unreachable (issue 10). The worker reaches the
 * database through a TCP proxy in the test process; cutting the proxy makes the
 * database unreachable for that worker only (the server and other tests go on).
 *
 * The stop must end within its own budget — drainTimeout + abortGrace + the release
 * budget (RELEASE_BUDGET_MS, 2 s) — and never use the pool after closing it; the
 * summary names the jobs it could not hand back (`unreleased`), which stay running
 * under this worker's lease in the database until the lease expires.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { RELEASE_BUDGET_MS } from '../../src/worker/shutdown.js';
import { openBaton, postgresUrl, tempDatabase, testLogger } from '../helpers/db.js';
import { spawnCli } from '../helpers/cli.js';
import { waitForEvent } from '../helpers/events.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));

/** The main server's address, and a URL for `url`'s schema that goes through `port` instead. */
function throughProxy(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}
const server = () => {
  const u = new URL(postgresUrl);
  return { host: u.hostname, port: Number(u.port || 5432) };
};

/** Slack for a busy 2-core machine: a process start, the event loop's stalls. Not a timing assertion. */
const SLACK_MS = 15_000;

describe('shutdown with the database unreachable', () => {
  it('CLI worker: the aborted job\'s release gives up within the stop\'s budget; the process exits 0 on its own, the summary and the log name the job not handed back, the pool is never used after close', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url }); // migrates the schema, directly
    const proxy = await startTcpProxy(server());
    const drain = 1000;
    const abortGrace = 1000;
    const worker = spawnCli(
      ['worker', '--tasks', TASKS, '--database', throughProxy(db.url, proxy.port), '--json', '--drain-timeout', String(drain), '--abort-grace', String(abortGrace), '--poll-interval', '200'],
      { BATON_LOG_LEVEL: 'info' },
    );
    await worker.waitFor((m) => m.event === 'worker:started', 'worker:started');
    const job = await baton.enqueue('steps', { steps: 100_000, ms: 50 });
    await worker.waitFor((m) => m.event === 'job:checkpoint' && m.jobId === job.id, 'a checkpoint of the job');

    await proxy.cut();
    const stopAt = performance.now();
    worker.kill('SIGTERM');
    const exit = await worker.exited;
    const elapsed = performance.now() - stopAt;

    expect(exit).toEqual({ code: 0, signal: null });
    expect(worker.stderr).not.toMatch(/Cannot use a pool after calling end/);
    expect(worker.stderr).not.toMatch(/exiting although/); // the CLI's fallback timer (exitWhenIdle) did not end it
    expect(elapsed).toBeLessThan(drain + abortGrace + RELEASE_BUDGET_MS + SLACK_MS);
    const stopped = worker.messages.find((m) => m.event === 'worker:stopped');
    expect(stopped).toMatchObject({ released: 0, unreleased: [job.id] });
    const logged = worker.stderr.split('\n').filter((line) => line.includes('could not be handed back'));
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({ level: 40, unreleased: [job.id] });
    // Still running under the stopped worker's lease: another worker takes it over when the lease expires.
    const after = await baton.getJob(job.id);
    expect(after.state).toBe('running');
    expect(after.attempt).toBe(1);
  });

  it('library worker, a handler that ignores its signal: the final release gives up within the budget; stop() names the job, close() never uses the pool after ending it', async () => {
    const db = tempDatabase();
    const direct = await openBaton({ database: db.url });
    const proxy = await startTcpProxy(server());
    const errors: string[] = [];
    const logger = testLogger();
    const viaProxy = await openBaton({ database: throughProxy(db.url, proxy.port), logger });
    const deaf = defineTask('deaf', { handler: () => new Promise<never>(() => undefined) });
    const worker = viaProxy.worker({ tasks: [deaf], drainTimeout: 200, abortGrace: 200, pollInterval: 100 });
    worker.on('worker:error', (e) => errors.push(String((e.error as Error).message)));
    await worker.start();
    const claimed = waitForEvent(worker, 'job:claimed');
    const job = await direct.enqueue(deaf, null);
    await claimed;

    await proxy.cut();
    const stopAt = performance.now();
    const summary = await worker.stop();
    await viaProxy.close();
    const elapsed = performance.now() - stopAt;

    expect(summary).toEqual({ finished: 0, released: 0, abandoned: 1, unreleased: [job.id] });
    expect(elapsed).toBeLessThan(200 + 200 + RELEASE_BUDGET_MS + SLACK_MS);
    expect(errors.filter((m) => /after calling end/.test(m))).toEqual([]);
    expect((await direct.getJob(job.id)).state).toBe('running');
  });
});
