/**
 * `/metrics` of `baton worker --http` (both drivers): the counters cover every job
 * the worker ran, those it claimed and finished before its HTTP server listened too.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli.js';
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
});
