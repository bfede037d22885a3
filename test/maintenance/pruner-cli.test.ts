/**
 * `baton worker --retention STATE=MS|forever` and `--no-prune`, through the real CLI
 * on both drivers: a worker prunes with the ages given (and prints each batch with
 * --json); bad values and contradicting flags are one-line usage errors (exit 2)
 * before anything is written.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { finished } from '../conformance/retention.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));

describe('baton worker --retention', () => {
  it('--retention completed=0 prunes a completed job at the first pass (printed as jobs:pruned with --json); failed=forever keeps a failed one', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const past = Date.now() - 8 * 86_400_000;
    const done = await finished(baton.store, 'completed', past);
    const failed = await finished(baton.store, 'failed', past);
    const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url, '--retention', 'completed=0', '--retention', 'failed=forever', '--json']);
    const line = await worker.waitFor((m) => m.event === 'jobs:pruned', 'jobs:pruned');
    expect(line).toMatchObject({ deleted: 1, state: 'completed', queue: null, task: null, keep: null });
    await worker.waitFor((m) => m.event === 'worker:started', 'worker:started');
    worker.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
    const left = (await baton.store.jobList({ limit: 10 })).map((j) => j.id);
    expect(left).toEqual([failed.id]);
    expect(left).not.toContain(done.id);
  });

  it.each([
    [['--retention', 'done=5'], /--retention.*"done=5" is not STATE=MS or STATE=forever/],
    [['--retention', 'completed=-1'], /"completed=-1" is not STATE=MS/],
    [['--retention', 'completed=315360000001'], /^baton: --retention completed: must be false \(keep forever\) or an integer number of ms from 0 to 315360000000/],
    [['--retention', 'completed=forever', '--retention', 'completed=0'], /--retention.*completed is given twice: one value per state/],
    [['--retention', 'completed=1', '--no-prune'], /--no-prune and --retention contradict each other/],
  ])('%j is refused with one line and exit 2; nothing is pruned', async (args, message) => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const job = await finished(baton.store, 'completed', Date.now() - 30 * 86_400_000);
    const run = await runCli(['worker', '--tasks', TASKS, '--database', db.url, ...args]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(message);
    expect((await baton.store.jobList({ limit: 10 })).map((j) => j.id)).toEqual([job.id]);
  });
});
