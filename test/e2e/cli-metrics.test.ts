/**
 * `/metrics` of `baton worker --http` (both drivers): the counters cover every job
 * the worker ran, those it claimed and finished before its HTTP server listened too.
 * And a port it cannot have fails the command before it claims anything.
 */
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli, spawnCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));

describe('metrics of the CLI worker', () => {
  it('worker --http: jobs queued before it started, completed by its first claims, are counted in baton_jobs_completed_total', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const ids: number[] = [];
    for (let n = 0; n < 5; n++) ids.push((await baton.enqueue('greet', { name: `n${n}` })).id);

    const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url, '--http', '0', '--json']);
    for (const id of ids) await worker.waitFor((m) => m.event === 'job:completed' && m.jobId === id, `job:completed of job ${id}`);
    const url = String((await worker.waitFor((m) => m.event === 'http:listening', 'http:listening')).url);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^baton_jobs_completed_total\{queue="default",task="greet"\} 5$/m);
    worker.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  });

  it('worker --http on a port already taken exits 1 naming --http, having claimed nothing', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const job = await baton.enqueue('greet', { name: 'waits' });
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as { port: number }).port;
      const run = await runCli(['worker', '--tasks', TASKS, '--database', db.url, '--http', String(port)]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`--http ${port}: cannot listen on 127.0.0.1`);
      expect(await baton.getJob(job.id)).toMatchObject({ state: 'queued', attempt: 0 });
    } finally {
      taken.close();
    }
  });
});
