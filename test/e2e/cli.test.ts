import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { stopSummaryText } from '../../src/cli/commands/worker.js';
import { onShutdownSignals } from '../../src/cli/signals.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import type { ChildHandle } from '../helpers/child.js';
import { runCli, spawnCli } from '../helpers/cli.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));
const STUBBORN = fileURLToPath(new URL('../fixtures/tasks-stubborn.ts', import.meta.url));

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
  it('--version prints the package version and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const answer = await runCli(['--version']);
    expect(answer).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

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
    const badPrefetch = await runCli(['worker', '--tasks', TASKS, '--prefetch', '-1', '--database', db.url]);
    expect(badPrefetch.code).toBe(2);
    expect(oneLine(badPrefetch.stderr)).toMatch(/--prefetch/);
    const [emptyQueue, queueTwice] = await Promise.all([
      runCli(['worker', '--tasks', TASKS, '--queue', '', '--database', db.url]),
      runCli(['worker', '--tasks', TASKS, '--queue', 'mail', '--queue', 'mail', '--database', db.url]),
    ]);
    expect(emptyQueue.code).toBe(2);
    expect(oneLine(emptyQueue.stderr)).toMatch(/--queue.*A queue name must not be empty/);
    expect(queueTwice.code).toBe(2);
    expect(oneLine(queueTwice.stderr)).toMatch(/--queue.*Queue "mail" is given twice/);
    // Limits the worker checks are named by their flag, not by the worker option behind
    // it, and are checked before the database is opened: a new SQLite file is not created.
    const untouched = join(db.dir, 'untouched.db');
    const [longQueue, shortLease] = await Promise.all([
      runCli(['worker', '--tasks', TASKS, '--queue', 'q'.repeat(201), '--database', db.url]),
      runCli(['worker', '--tasks', TASKS, '--lease-ttl', '0', '--database', `sqlite:${untouched}`]),
    ]);
    expect(longQueue.code).toBe(2);
    expect(oneLine(longQueue.stderr)).toBe('baton: --queue: must be at most 200 characters (a queue name has 1-200)');
    expect(shortLease.code).toBe(2);
    expect(oneLine(shortLease.stderr)).toMatch(/^baton: --lease-ttl: must be at least 100/);
    expect(existsSync(untouched)).toBe(false);

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
    expect(unknown.code).toBe(2); // a usage mistake, like the invalid payload
    expect(oneLine(unknown.stderr)).toBe('baton: unknown task "gret"; known tasks: greet, steps');
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
    expect(oneLine(again.stderr)).toBe(`baton: job ${queued.id} is already cancelled; nothing to cancel`);
    expect(again_json.code).toBe(1);
    expect(json(again_json.stdout)).toMatchObject({ outcome: 'unchanged', job: { id: queued.id, state: 'cancelled' } });
    expect(missing.code).toBe(1);
    expect(oneLine(missing.stderr)).toMatch(/^baton: .*no job with id 99999/);

    // retry brings it back; retrying a queued job is refused with its state
    const retried = await runCli(['retry', String(queued.id), '--database', db.url, '--json']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(json(retried.stdout)).toMatchObject({ id: queued.id, state: 'queued', attempt: 0 });
    const refused = await runCli(['retry', String(queued.id), '--database', db.url]);
    expect(refused.code).toBe(1);
    expect(oneLine(refused.stderr)).toMatch(/^baton: .*is queued; only failed or cancelled jobs can be retried/);
  });

  it('promote runs a delayed job now, refuses one already due naming its state (exit 1), an unknown id (exit 1); retry --fresh clears the checkpoint', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const delayed = await baton.enqueue('greet', { name: 'Ada' }, { delay: 3_600_000 });
    const promoted = await runCli(['promote', String(delayed.id), '--database', db.url]);
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout).toMatch(new RegExp(`job ${delayed.id} promoted: due now`));
    expect((await baton.getJob(delayed.id)).runAt.getTime()).toBeLessThan(delayed.runAt.getTime() - 3_000_000); // due now, not in an hour
    const [again, againJson, missing] = await Promise.all([
      runCli(['promote', String(delayed.id), '--database', db.url]),
      runCli(['promote', String(delayed.id), '--database', db.url, '--json']),
      runCli(['promote', '99999', '--database', db.url]),
    ]);
    expect(again.code).toBe(1);
    expect(oneLine(again.stderr)).toMatch(new RegExp(`^baton: job ${delayed.id} is queued and already due; only a queued job waiting for a later runAt`));
    expect(againJson.code).toBe(1);
    expect(json(againJson.stdout)).toMatchObject({ outcome: 'unchanged', job: { id: delayed.id, state: 'queued' } });
    expect(missing.code).toBe(1);
    expect(oneLine(missing.stderr)).toMatch(/^baton: .*no job with id 99999/);

    // A cancelled job with a checkpoint (stored by a run): --fresh clears it.
    const job = await baton.enqueue('greet', { name: 'Bob' }, { queue: 'resumable' });
    const [claimed] = await baton.store.jobClaim({ workerId: 'w', tasks: ['greet'], queues: ['resumable'], limit: 1, leaseMs: 60_000, now: baton.clock.now() });
    expect(claimed!.id).toBe(job.id);
    await baton.store.jobCheckpoint({ id: job.id, token: claimed!.leaseToken, checkpoint: '{"step":3}' });
    await baton.cancel(job.id);
    await baton.store.jobRelease({ leases: [{ id: job.id, token: claimed!.leaseToken }], now: baton.clock.now() });
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'cancelled', checkpoint: { step: 3 } });
    const fresh = await runCli(['retry', String(job.id), '--fresh', '--database', db.url]);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toMatch(new RegExp(`job ${job.id} queued again .*, from scratch`));
    expect(await baton.getJob(job.id)).toMatchObject({ state: 'queued', checkpoint: null });
  });

  it('a worker started with --tasks FILE.ts runs jobs, and a running job cancelled from the CLI ends cancelled; a completed one cannot be', async () => {
    const db = tempDatabase();
    const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url, '--concurrency', '2', '--prefetch', '2', '--json']);
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
    expect(oneLine(finished.stderr)).toBe(`baton: job ${greetId} is already completed; nothing to cancel`);

    worker.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  });

  it('the worker\'s start-up line and worker:started event show --prefetch when it is above 0, and leave it out at 0', async () => {
    const start = (flags: string[]) => spawnCli(['worker', '--tasks', TASKS, '--database', tempDatabase().url, '--concurrency', '2', ...flags]);
    const workers = { text: start(['--prefetch', '3']), json: start(['--prefetch', '3', '--json']), textNone: start([]), jsonNone: start(['--prefetch', '0', '--json']) };
    const banner = (worker: ChildHandle) => worker.waitFor((m) => m.type === 'text' && / running /.test(String(m.text)), 'the start-up line');
    const started = (worker: ChildHandle) => worker.waitFor((m) => m.event === 'worker:started', 'worker:started');
    const [text, json, textNone, jsonNone] = await Promise.all([banner(workers.text), started(workers.json), banner(workers.textNone), started(workers.jsonNone)]);
    expect(String(text.text)).toMatch(/^worker \S+ running greet, steps from default \(concurrency 2, prefetch 3\); Ctrl-C to stop$/);
    expect(json).toMatchObject({ concurrency: 2, prefetch: 3 });
    expect(String(textNone.text)).toMatch(/^worker \S+ running greet, steps from default \(concurrency 2\); Ctrl-C to stop$/);
    expect(jsonNone).toMatchObject({ concurrency: 2 });
    expect(jsonNone).not.toHaveProperty('prefetch');
    for (const worker of Object.values(workers)) worker.kill('SIGTERM');
    for (const worker of Object.values(workers)) expect((await worker.exited).code).toBe(0);
  });

  it('with jobs already queued, worker:started is printed before the first job:claimed', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const jobs = await baton.enqueueMany([0, 1, 2].map((n) => ({ task: 'greet', payload: { name: `n${n}` } })));
    const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url, '--json']);
    await worker.waitFor((m) => m.event === 'job:completed' && m.jobId === jobs[2]!.id, 'the last job completed');
    const events = worker.messages.map((m) => m.event).filter((e) => e === 'worker:started' || e === 'job:claimed');
    expect(events).toEqual(['worker:started', 'job:claimed', 'job:claimed', 'job:claimed']);
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

  it('--payload keeps null, false, 0 and [] as given, reads @FILE and - (stdin), and refuses an unreadable file', async () => {
    const db = tempDatabase();
    const file = join(db.dir, 'payload.json');
    const big = { items: Array.from({ length: 20_000 }, (_, i) => `item-${i}`) }; // ~250 kB: no command line carries that
    writeFileSync(file, JSON.stringify(big));
    const enqueue = (payload: string, input?: string) =>
      runCli(['enqueue', 'greet', '--payload', payload, '--database', db.url, '--json'], input === undefined ? {} : { input });
    const runs = await Promise.all([enqueue('null'), enqueue('false'), enqueue('0'), enqueue('[]'), enqueue('""'), enqueue(`@${file}`), enqueue('-', '{"from":"stdin"}\n')]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const printed = runs.map((r) => json(r.stdout).payload);
    expect(printed).toEqual([null, false, 0, [], '', big, { from: 'stdin' }]);
    const baton = await openBaton({ database: db.url });
    const stored = await Promise.all(runs.map((r) => baton.getJob(json<{ id: number }>(r.stdout).id)));
    expect(stored.map((j) => j.payload)).toEqual([null, false, 0, [], '', big, { from: 'stdin' }]);

    const [missing, badStdin] = await Promise.all([
      runCli(['enqueue', 'greet', '--payload', `@${join(db.dir, 'nope.json')}`, '--database', db.url]),
      runCli(['enqueue', 'greet', '--payload', '-', '--database', db.url], { input: '{oops' }),
    ]);
    expect(missing.code).toBe(2);
    expect(oneLine(missing.stderr)).toMatch(/^baton: --payload: cannot read .*nope\.json: ENOENT/);
    expect(badStdin.code).toBe(2);
    expect(oneLine(badStdin.stderr)).toMatch(/^baton: --payload \(from stdin\): not valid JSON/);
    expect(await baton.listJobs({ limit: 100 })).toHaveLength(runs.length);
  });

  it('enqueue --key says when the key already has a job and does not enqueue again; --json adds "created"', async () => {
    const db = tempDatabase();
    const args = ['enqueue', 'greet', '--payload', '{"name":"Ada"}', '--key', 'report-7', '--database', db.url];
    const first = await runCli([...args, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const job = json(first.stdout);
    expect(job).toMatchObject({ key: 'report-7', created: true });

    const [again, againJson] = await Promise.all([runCli(args), runCli([...args, '--json'])]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(`job ${job.id} already exists for key report-7 (queued); not enqueued again`);
    expect(againJson.code, againJson.stderr).toBe(0);
    expect(json(againJson.stdout)).toMatchObject({ id: job.id, key: 'report-7', created: false }); // one JSON object

    const baton = await openBaton({ database: db.url });
    expect((await baton.listJobs()).map((j) => j.id)).toEqual([job.id]);
  });

  it('a tasks file or a path that cannot be used is one line "baton: cannot load tasks file …" and no stack; --verbose adds it', async () => {
    const db = tempDatabase();
    const file = (name: string, text: string) => (writeFileSync(join(db.dir, name), text), join(db.dir, name));
    const syntax = file('syntax.ts', 'export const x = ;\n');
    const throws = file('throws.ts', 'throw new Error("no TOKEN in the environment");\n');
    const missing = file('missing.ts', 'import "no-such-package-xyz";\nexport const x = 1;\n');
    const data = file('tasks.json', '{}');
    const dir = join(db.dir, 'tasks-dir');
    mkdirSync(dir);
    const nowhere = join(db.dir, 'nowhere.ts');
    const load = (path: string, ...extra: string[]) => runCli(['enqueue', 'greet', '--tasks', path, '--database', db.url, ...extra]);
    const [a, b, c, d, e, f, verbose] = await Promise.all([load(syntax), load(throws), load(missing), load(data), load(dir), load(nowhere), load(throws, '--verbose')]);

    const cannot = (path: string) => `baton: cannot load tasks file ${path}: `;
    expect(a.code).toBe(1);
    expect(oneLine(a.stderr)).toMatch(new RegExp(`^${cannot(syntax)}.*syntax\\.ts:1:\\d+: Unexpected ";"$`));
    expect(b.code).toBe(1);
    expect(oneLine(b.stderr)).toBe(`${cannot(throws)}no TOKEN in the environment`);
    expect(c.code).toBe(1);
    expect(oneLine(c.stderr)).toMatch(new RegExp(`^${cannot(missing)}Cannot find (module|package) '?no-such-package-xyz`));
    expect(d.code).toBe(2);
    expect(oneLine(d.stderr)).toBe(`${cannot(data)}not a JavaScript or TypeScript module (.ts, .mts, .cts, .tsx, .js, .mjs or .cjs)`);
    expect(e.code).toBe(2);
    expect(oneLine(e.stderr)).toBe(`${cannot(dir)}it is a directory; give the module file (e.g. tasks.ts)`);
    expect(f.code).toBe(2);
    expect(oneLine(f.stderr)).toBe(`${cannot(nowhere)}no such file`);
    // The worker loads its tasks the same way.
    const worker = await runCli(['worker', '--tasks', throws, '--database', db.url]);
    expect(worker.code).toBe(1);
    expect(oneLine(worker.stderr)).toBe(`${cannot(throws)}no TOKEN in the environment`);

    expect(verbose.code).toBe(1);
    expect(verbose.stderr.split('\n')[0]).toBe(`${cannot(throws)}no TOKEN in the environment`);
    expect(verbose.stderr).toMatch(/\n\s+at /); // the stack, on request
  });

  it('a first signal drains; a second one (200 ms or more later) releases a handler that ignores its signal, said once', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const worker = spawnCli(['worker', '--tasks', STUBBORN, '--database', db.url, '--drain-timeout', '120000', '--abort-grace', '120000', '--json']);
    await worker.waitFor((m) => m.event === 'worker:started', 'worker:started');
    const job = await baton.enqueue('stubborn', { ms: 250 });
    await worker.waitFor((m) => m.event === 'job:checkpoint' && m.jobId === job.id, 'a checkpoint');

    worker.kill('SIGTERM');
    await worker.waitFor((m) => m.event === 'worker:stopping', 'worker:stopping');
    // Draining: the job goes on. Two checkpoints after the stopping line are 250 ms apart,
    // so the next signal comes well past the 200 ms in which a repeat counts as npm's copy.
    const stoppingAt = worker.messages.findIndex((m) => m.event === 'worker:stopping');
    const checkpointsSinceStopping = () => worker.messages.slice(stoppingAt).filter((m) => m.event === 'job:checkpoint' && m.jobId === job.id).length;
    await worker.waitFor(() => checkpointsSinceStopping() >= 2, 'two checkpoints while draining');
    expect(worker.messages.some((m) => m.event === 'worker:stop-now')).toBe(false);

    worker.kill('SIGTERM');
    const exit = await worker.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    const events = worker.messages.map((m) => m.event);
    expect(events.indexOf('worker:stop-now')).toBeGreaterThan(events.indexOf('worker:stopping'));
    expect(worker.messages.find((m) => m.event === 'job:released')).toMatchObject({ jobId: job.id, abandoned: true });
    expect(worker.messages.find((m) => m.event === 'worker:stopped')).toMatchObject({ finished: 0, released: 1, abandoned: 1 });
    const released = await baton.getJob(job.id);
    expect(released.state).toBe('queued');
    expect(released.attempt).toBe(0);
  });
});

describe('CLI signals and wording', () => {
  it('a repeat within 200 ms of the signal before it is dropped as npm\'s copy; each later one is accepted', () => {
    const target = new EventEmitter();
    let now = 0;
    const seen: string[] = [];
    const off = onShutdownSignals(
      { first: (signal) => seen.push(`first ${signal}`), again: (signal, count) => seen.push(`again ${signal} #${count}`) },
      { target, now: () => now },
    );
    const at = (ms: number, signal: NodeJS.Signals) => ((now = ms), target.emit(signal, signal));
    at(0, 'SIGINT');
    at(3, 'SIGINT'); // npm's forwarded copy of the same Ctrl-C
    at(199, 'SIGTERM');
    at(450, 'SIGINT');
    at(452, 'SIGINT');
    at(900, 'SIGTERM');
    expect(seen).toEqual(['first SIGINT', 'again SIGINT #2', 'again SIGTERM #3']);
    off();
    at(5000, 'SIGINT');
    expect(seen).toHaveLength(3);
  });

  it('the stop summary says a released job whose handler was abandoned once, with plurals', () => {
    expect(stopSummaryText({ finished: 0, released: 1, abandoned: 1 }, 1)).toBe('0 finished, 1 released (its handler had not returned and was abandoned)');
    expect(stopSummaryText({ finished: 2, released: 3, abandoned: 3 }, 3)).toBe('2 finished, 3 released (their handlers had not returned and were abandoned)');
    expect(stopSummaryText({ finished: 1, released: 3, abandoned: 2 }, 1)).toBe('1 finished, 3 released (1 of them: the handler had not returned and was abandoned); 1 other handler had not returned and was abandoned');
    expect(stopSummaryText({ finished: 4, released: 0, abandoned: 0 })).toBe('4 finished, 0 released');
    expect(stopSummaryText({ finished: 0, released: 0, abandoned: 0, unreleased: [7] })).toBe(
      '0 finished, 0 released; 1 not handed back (job 7: the database could not be reached; another worker takes it over when the lease expires)',
    );
    expect(stopSummaryText({ finished: 0, released: 1, abandoned: 0, unreleased: [7, 9] })).toMatch(/; 2 not handed back \(jobs 7, 9: .* takes them over/);
  });
});
