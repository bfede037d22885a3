/**
 * The CLI when the reader of its output goes away early (`baton jobs | head -1`,
 * `baton worker 2>&1 | head -1`), both drivers: no EPIPE crash, no stack trace; the
 * command finishes and exits with its own status (output.ts, endOutputOnClosedPipe).
 */
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { until } from '../helpers/events.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));

describe('CLI output to a closed pipe', () => {
  it('jobs --json | head -1: its reader closes after the first chunk of a long listing; exit 0, nothing on stderr', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    // 1000 jobs print several hundred kB: far more than a pipe holds, so the CLI is still writing when the reader closes.
    await baton.enqueueMany(Array.from({ length: 1000 }, (_, n) => ({ task: 'greet', payload: { name: `n${n}` } })));
    const cli = spawnCli(['jobs', '--json', '--limit', '1000', '--database', db.url]);
    const stdout = cli.process.stdout!;
    const [first] = (await once(stdout, 'data')) as [Buffer];
    stdout.destroy();
    expect(first.toString()).toMatch(/^\[/);
    expect(await cli.exited).toEqual({ code: 0, signal: null });
    expect(cli.stderr).toBe('');
  });

  it('worker with stdout and stderr closed from the start: runs a queued job, then SIGTERM stops it gracefully, exit 0', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const job = await baton.enqueue('greet', { name: 'Ada' });
    const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url]);
    worker.process.stdout!.destroy();
    worker.process.stderr!.destroy();
    const exited = () => worker.process.exitCode !== null || worker.process.signalCode !== null;
    await until(async () => exited() || (await baton.getJob(job.id)).state === 'completed', 'the job completed or the worker exited');
    // Its "stopping" (stderr) and "stopped" (stdout) lines go nowhere.
    worker.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'completed' });
  });
});
