/**
 * The CLI worker's logs (issue 13, item 2), both drivers: pretty, one line per event
 * in a terminal (a pseudo-terminal through util-linux script(1)) or with BATON_LOG_FORMAT=pretty;
 * pino JSON lines when piped; at info one outcome line per job (task, id, attempt,
 * duration, outcome) — a failed attempt's at warn, with the error's message and no
 * stack (issue 30, item 11) —; --quiet leaves out completed jobs' lines.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ChildHandle } from '../helpers/child.js';
import { runCli, spawnCli, spawnCliInTerminal } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { until } from '../helpers/events.js';

const TASKS = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));
/** Logs at info in the format chosen by the terminal, whatever the environment running the tests says. */
const INFO = { BATON_LOG_LEVEL: 'info', BATON_LOG_FORMAT: '' };
const ANSI = /\u001b\[[0-9;]*m/g;
/** A pretty line: time, level, message, then the fields as one JSON object. */
const PRETTY = /^\[\d\d:\d\d:\d\d\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL): .+$/;

type LogLine = Record<string, unknown> & { level: number; msg: string };

/** The child's stderr as lines, each parsed as JSON (it fails the test if one is not). */
function jsonLines(child: ChildHandle): LogLine[] {
  return child.stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as LogLine);
}

/** Starts a piped worker, enqueues a `greet` job and waits for its job:completed line on stdout. */
async function runOneJob(db: { url: string }, flags: string[], env: NodeJS.ProcessEnv): Promise<{ worker: ChildHandle; id: number }> {
  const worker = spawnCli(['worker', '--tasks', TASKS, '--database', db.url, '--json', ...flags], env);
  await worker.waitFor((m) => m.event === 'worker:started', 'worker:started');
  const baton = await openBaton({ database: db.url });
  const { id } = await baton.enqueue('greet', { name: 'Ada' });
  await worker.waitFor((m) => m.event === 'job:completed' && m.jobId === id, 'job:completed');
  return { worker, id };
}

/** SIGTERM, then the exit code once its "worker stopped" log line is on stderr (its last). */
async function stop(worker: ChildHandle, stoppedLine: RegExp): Promise<number | null> {
  worker.kill('SIGTERM');
  const { code } = await worker.exited;
  await until(() => stoppedLine.test(worker.stderr), 'the "worker stopped" log line');
  return code;
}

describe('CLI worker logs', () => {
  it('piped: pino JSON lines on stderr, with one outcome line per job: task, jobId, attempt, durationMs, outcome', async () => {
    const db = tempDatabase();
    const { worker, id } = await runOneJob(db, [], INFO);
    await until(() => /"outcome":"completed"/.test(worker.stderr), 'the outcome line');
    expect(await stop(worker, /"msg":"worker stopped"/)).toBe(0);

    const lines = jsonLines(worker);
    const outcomes = lines.filter((l) => 'outcome' in l);
    expect(outcomes).toEqual([
      expect.objectContaining({ level: 30, component: 'job', outcome: 'completed', task: 'greet', jobId: id, attempt: 1, durationMs: expect.any(Number), msg: expect.stringMatching(new RegExp(`^greet job ${id} attempt 1: completed \\(\\d+ ms\\)$`)) }),
    ]);
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['worker started', 'worker stopped']));
  });

  it('piped: a failed attempt is one line at warn ending with the error\'s message, no stack', async () => {
    const db = tempDatabase();
    const { worker } = await runOneJob(db, [], INFO);
    const baton = await openBaton({ database: db.url });
    // Enqueued by name, unchecked: the worker's schema refuses it, a non-retryable failure.
    const { id } = await baton.enqueue('greet', { name: '' });
    await worker.waitFor((m) => m.event === 'job:failed' && m.jobId === id, 'job:failed');
    await until(() => /"outcome":"failed"/.test(worker.stderr), 'the outcome line');
    expect(await stop(worker, /"msg":"worker stopped"/)).toBe(0);

    const about = jsonLines(worker).filter((l) => l.jobId === id);
    expect(about).toEqual([
      expect.objectContaining({ level: 40, outcome: 'failed', task: 'greet', jobId: id, attempt: 1, error: expect.stringContaining('name'), msg: expect.stringMatching(new RegExp(`^greet job ${id} attempt 1: failed \\(\\d+ ms\\): .*name`)) }),
    ]);
    expect(about[0]).not.toHaveProperty('err');
    expect(worker.stderr).not.toMatch(/"stack"/);
  });

  it('--quiet: no line for a completed job, the other info lines stay', async () => {
    const db = tempDatabase();
    const { worker } = await runOneJob(db, ['--quiet'], INFO);
    expect(await stop(worker, /"msg":"worker stopped"/)).toBe(0);
    const lines = jsonLines(worker);
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['worker started', 'worker stopped']));
    expect(lines.filter((l) => 'outcome' in l)).toEqual([]);
  });

  it('BATON_LOG_FORMAT=pretty when piped: one readable line per event, no JSON', async () => {
    const db = tempDatabase();
    const { worker, id } = await runOneJob(db, [], { ...INFO, BATON_LOG_FORMAT: 'pretty' });
    await until(() => / completed \(\d+ ms\)/.test(worker.stderr), 'the outcome line');
    expect(await stop(worker, /INFO: worker stopped/)).toBe(0);
    const lines = worker.stderr.replace(ANSI, '').split('\n').filter(Boolean);
    for (const line of lines) expect(line).toMatch(PRETTY);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`INFO: greet job ${id} attempt 1: completed \\(\\d+ ms\\) .*"outcome":"completed"`)));
  });

  it('a bad BATON_LOG_FORMAT is a usage error naming it', async () => {
    const db = tempDatabase();
    const run = await runCli(['worker', '--tasks', TASKS, '--database', db.url], { env: { BATON_LOG_FORMAT: 'fancy' } });
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe('baton: BATON_LOG_FORMAT must be json or pretty, not "fancy"');
  });

  it('in a terminal: pretty by default, one line per event, the outcome line among them', async () => {
    const db = tempDatabase();
    const terminal = spawnCliInTerminal(['worker', '--tasks', TASKS, '--database', db.url], INFO);
    const banner = await terminal.waitFor((m) => m.type === 'text' && / running greet, steps from default/.test(String(m.text)), 'the worker running');
    // "worker host:PID:xxxxxx running …": the CLI's own pid, to signal it rather than script(1).
    const pid = Number(/^worker \S*:(\d+):[0-9a-f]+ running/.exec(String(banner.text))![1]);
    const baton = await openBaton({ database: db.url });
    const { id } = await baton.enqueue('greet', { name: 'Ada' });
    const outcome = new RegExp(`INFO: greet job ${id} attempt 1: completed \\(\\d+ ms\\)`);
    const text = () => terminal.messages.map((m) => String(m.text ?? JSON.stringify(m)).replace(ANSI, ''));
    await until(() => text().some((line) => outcome.test(line)), 'the outcome line');
    process.kill(pid, 'SIGTERM');
    expect((await terminal.exited).code).toBe(0);

    const logs = text().filter((line) => line.startsWith('['));
    expect(logs.length).toBeGreaterThanOrEqual(3); // worker started, the outcome, worker stopping/stopped
    for (const line of logs) expect(line).toMatch(PRETTY);
    expect(text().filter((line) => line.startsWith('{'))).toEqual([]);
    expect(logs.some((line) => /INFO: worker started/.test(line))).toBe(true);
  });
});
