import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { runCli, spawnCli } from '../helpers/cli.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));

/** Every job field SPEC "Jobs" names, as `--json` prints them. */
const SPEC_FIELDS = [
  'id', 'queue', 'task', 'payload', 'state', 'priority', 'runAt', 'attempt', 'maxAttempts', 'key', 'progress',
  'checkpoint', 'result', 'errors', 'cancelRequestedAt', 'cancelReason', 'createdAt', 'startedAt', 'finishedAt', 'leaseOwner',
];

const json = <T = Record<string, unknown>>(text: string) => JSON.parse(text) as T;
/** A user error: exactly one line on stderr, no stack trace. */
const oneLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(stderr).not.toMatch(/\n\s+at /);
  return lines[0]!;
};

describe('baton CLI', () => {
  it('enqueue --json prints the job with its id; jobs and job --json use the SPEC field names', async () => {
    const db = tempDatabase();
    const enqueued = await runCli(['enqueue', 'greet', '--payload', '{"name":"Ada"}', '--queue', 'mail', '--priority', '5', '--key', 'k1', '--max-attempts', '4', '--database', db.url, '--json']);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const job = json(enqueued.stdout);
    expect(job.id).toEqual(expect.any(Number));
    expect(job).toMatchObject({ task: 'greet', queue: 'mail', priority: 5, key: 'k1', maxAttempts: 4, state: 'queued', payload: { name: 'Ada' } });

    const [list, one, human] = await Promise.all([
      runCli(['jobs', '--json', '--queue', 'mail', '--database', db.url]),
      runCli(['job', String(job.id), '--json', '--database', db.url]),
      runCli(['jobs', '--database', db.url]),
    ]);
    expect(list.code, list.stderr).toBe(0);
    const jobs = json<Array<Record<string, unknown>>>(list.stdout);
    expect(jobs.map((j) => j.id)).toEqual([job.id]);
    expect(one.code, one.stderr).toBe(0);
    const detail = json(one.stdout);
    for (const field of SPEC_FIELDS) {
      expect(detail, `field ${field}`).toHaveProperty(field);
      expect(jobs[0], `field ${field}`).toHaveProperty(field);
    }
    expect(detail.runAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^ID\s+TASK\s+QUEUE\s+STATE\s+ATTEMPT\s+PROGRESS\s+AGE/);
    expect(human.stdout).toMatch(new RegExp(`^${job.id}\\s+greet\\s+mail\\s+queued\\s+0/4`, 'm'));
    expect(human.stderr).toBe('');
  });

  it('refuses bad input with one line naming the problem and exit code 2; nothing is enqueued', async () => {
    const db = tempDatabase();
    const [badJson, badNumber, badState, badId, bothTimes] = await Promise.all([
      runCli(['enqueue', 'greet', '--payload', '{name: Ada}', '--database', db.url]),
      runCli(['enqueue', 'greet', '--priority', 'high', '--database', db.url]),
      runCli(['jobs', '--state', 'sleeping', '--database', db.url]),
      runCli(['cancel', 'abc', '--database', db.url]),
      runCli(['enqueue', 'greet', '--delay', '10', '--run-at', '2030-01-01T00:00:00Z', '--database', db.url]),
    ]);
    expect(badJson.code).toBe(2);
    expect(oneLine(badJson.stderr)).toMatch(/--payload.*not valid JSON/);
    expect(badNumber.code).toBe(2);
    expect(oneLine(badNumber.stderr)).toMatch(/--priority.*"high" is not an integer/);
    expect(badState.code).toBe(2);
    expect(oneLine(badState.stderr)).toMatch(/--state.*sleeping.*queued, running, completed, failed, cancelled/);
    expect(badId.code).toBe(2);
    expect(oneLine(badId.stderr)).toMatch(/argument 'id'.*"abc" is not an integer/);
    expect(bothTimes.code).toBe(2);
    expect(oneLine(bothTimes.stderr)).toMatch(/--delay or --run-at, not both/);

    const baton = await openBaton({ database: db.url });
    expect(await baton.listJobs()).toEqual([]);
  });

  it('with --tasks (a .ts file, no build) refuses an unknown task and a payload its schema rejects', async () => {
    const db = tempDatabase();
    const [unknown, invalid, valid] = await Promise.all([
      runCli(['enqueue', 'gret', '--payload', '{"name":"Ada"}', '--tasks', TASKS, '--database', db.url]),
      runCli(['enqueue', 'greet', '--payload', '{"name":42}', '--tasks', TASKS, '--database', db.url]),
      runCli(['enqueue', 'greet', '--payload', '{"name":"Ada"}', '--tasks', TASKS, '--database', db.url, '--json']),
    ]);
    expect(unknown.code).toBe(1);
    expect(oneLine(unknown.stderr)).toMatch(/unknown task "gret"; known tasks: greet, steps/);
    expect(invalid.code).toBe(2);
    expect(oneLine(invalid.stderr)).toMatch(/invalid payload for task "greet".*name:/);
    expect(valid.code, valid.stderr).toBe(0);

    const baton = await openBaton({ database: db.url });
    const jobs = await baton.listJobs();
    expect(jobs.map((j) => j.id)).toEqual([json(valid.stdout).id]);
  });

  it('cancels a queued job at once, refuses a finished one naming its state, and an unknown id', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const queued = await baton.enqueue('greet', { name: 'Ada' });
    const cancelled = await runCli(['cancel', String(queued.id), '--reason', 'not needed', '--database', db.url]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toMatch(new RegExp(`job ${queued.id} cancelled`));
    const after = await baton.getJob(queued.id);
    expect(after.state).toBe('cancelled');
    expect(after.cancelReason).toBe('not needed');

    const [again, again_json, missing] = await Promise.all([
      runCli(['cancel', String(queued.id), '--database', db.url]),
      runCli(['cancel', String(queued.id), '--database', db.url, '--json']),
      runCli(['cancel', '99999', '--database', db.url]),
    ]);
    expect(again.code).toBe(1);
    expect(oneLine(again.stderr)).toBe(`job ${queued.id} is already cancelled; nothing to cancel`);
    expect(again_json.code).toBe(1);
    expect(json(again_json.stdout)).toMatchObject({ outcome: 'unchanged', job: { id: queued.id, state: 'cancelled' } });
    expect(missing.code).toBe(1);
    expect(oneLine(missing.stderr)).toMatch(/no job with id 99999/);

    // retry brings it back; retrying a queued job is refused with its state
    const retried = await runCli(['retry', String(queued.id), '--database', db.url, '--json']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(json(retried.stdout)).toMatchObject({ id: queued.id, state: 'queued', attempt: 0 });
    const refused = await runCli(['retry', String(queued.id), '--database', db.url]);
    expect(refused.code).toBe(1);
    expect(oneLine(refused.stderr)).toMatch(/is queued; only failed or cancelled jobs can be retried/);
  });

  it('a worker started with --tasks FILE.ts runs jobs, and a running job cancelled from the CLI ends cancelled; a completed one cannot be', async () => {
    const db = tempDatabase();
    const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url, '--concurrency', '2', '--json']);
    await worker.waitFor((m) => m.event === 'worker:started', 'worker:started');

    const baton = await openBaton({ database: db.url });
    const greetId = (await baton.enqueue('greet', { name: 'Ada' })).id;
    await worker.waitFor((m) => m.event === 'job:completed' && m.jobId === greetId, 'greet completed');

    const longId = (await baton.enqueue('steps', { steps: 100_000, ms: 20 })).id;
    await worker.waitFor((m) => m.event === 'job:checkpoint' && m.jobId === longId, 'the long job checkpointed');

    const requested = await runCli(['cancel', String(longId), '--reason', 'from the CLI', '--database', db.url]);
    expect(requested.code, requested.stderr).toBe(0);
    expect(requested.stdout).toMatch(new RegExp(`cancel requested for job ${longId}`));
    await worker.waitFor((m) => m.event === 'job:cancelled' && m.jobId === longId, 'the long job cancelled');

    const job = await baton.getJob(longId);
    expect(job.state).toBe('cancelled');
    expect(job.attempt).toBe(1);
    expect(job.cancelReason).toBe('from the CLI');
    expect((await baton.getJob(greetId)).result).toBe('hello Ada');

    const finished = await runCli(['cancel', String(greetId), '--database', db.url]);
    expect(finished.code).toBe(1);
    expect(oneLine(finished.stderr)).toBe(`job ${greetId} is already completed; nothing to cancel`);

    worker.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  });

  it('a worker exits 0 on SIGTERM after releasing a checkpointing job: queued again, attempt not counted, checkpoint kept', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url, '--drain-timeout', '100', '--abort-grace', '5000', '--json']);
    await worker.waitFor((m) => m.event === 'worker:started', 'worker:started');
    const job = await baton.enqueue('steps', { steps: 100_000, ms: 10 });
    await worker.waitFor((m) => m.event === 'job:checkpoint' && m.jobId === job.id, 'a checkpoint');

    worker.kill('SIGTERM');
    const exit = await worker.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(worker.messages.find((m) => m.event === 'job:released')).toMatchObject({ jobId: job.id });
    expect(worker.messages.find((m) => m.event === 'worker:stopped')).toMatchObject({ released: 1 });

    const released = await baton.getJob(job.id);
    expect(released.state).toBe('queued');
    expect(released.attempt).toBe(0);
    expect(released.leaseOwner).toBeNull();
    expect((released.checkpoint as { step: number }).step).toBeGreaterThanOrEqual(1);
  });
});
