import { Command } from 'commander';
import type { EnqueueOptions } from '../../job/types.js';
import { loadTasks } from '../load-tasks.js';
import { UsageError, byFlag, integer, isoDate, readJsonOption, withBaton, withDatabase } from '../options.js';
import { displayState, err, out, printJson } from '../output.js';
import type { Baton } from '../../baton.js';
import { WaitError, WaitTimeoutError } from '../../client/wait-result.js';

interface EnqueueFlags {
  payload?: string;
  queue?: string;
  priority?: number;
  delay?: number;
  runAt?: Date;
  maxAttempts?: number;
  timeout?: number;
  key?: string;
  concurrencyKey?: string;
  tasks?: string;
  database?: string;
  json?: boolean;
  wait?: boolean;
  waitTimeout?: number;
}

/**
 * `baton enqueue TASK`: enqueues one job and prints it. With `--tasks` the task
 * name must be one the module exports and the payload is checked against its
 * schema; without, the payload is only checked to be plain JSON. The payload is
 * JSON text, `@FILE` or `-` (stdin). With `--key`, a job already holding the key
 * is printed instead and said so (`"created": false` with `--json`).
 *
 * The flags are parsed here (integers, ISO dates, JSON) and handed to the client,
 * which checks their values and limits: its issues are reported by flag name
 * (`--max-attempts: Too big…`), exit code 2, nothing enqueued.
 *
 * With `--wait` it then awaits the job's end (`baton.waitForResult`) and prints its result:
 * exit 0 when completed, 1 when it failed or was cancelled, 124 when `--wait-timeout` passed
 * first (as timeout(1) does; the job goes on).
 */
export function enqueueCommand(): Command {
  return withDatabase(new Command('enqueue'))
    .description('enqueue a job and print it')
    .argument('<task>', 'task name')
    .option('--payload <json>', 'payload as JSON; @FILE reads it from FILE, - from stdin (default: null)')
    .option('--queue <name>', "queue (default: the task's own queue when --tasks declares one, else default)")
    .option('--priority <n>', 'lower runs first, -1000000..1000000 (default: 0)', anyInteger)
    .option('--delay <ms>', 'run no earlier than this many ms from now (up to 9999-12-31T23:59:59.999Z)', anyInteger)
    .option('--run-at <iso>', 'run no earlier than this time: ISO 8601 with Z or an offset, or a date (UTC midnight); 1970-01-01..9999-12-31', isoDate)
    .option('--max-attempts <n>', 'attempts before failed, 1..1000 (default: the task\'s, else 3)', anyInteger)
    .option('--timeout <ms>', 'per-attempt timeout, 1..2147483647 (default: the task\'s, else none)', anyInteger)
    .option('--key <key>', 'idempotency key, 1..500 characters: while a job with this key is not finished, return it instead')
    .option('--concurrency-key <key>', "concurrency key, 1..500 characters: the queue's jobs with one key take turns and share the task's per-key limit (--tasks gives the limit)")
    .option('--tasks <file>', 'module exporting the tasks: refuses unknown names and checks the payload schema')
    .option('--json', 'print the job as JSON')
    .option('--wait', "then wait for the job's end and print its result (exit 0 completed, 1 failed or cancelled, 124 timed out)")
    .option('--wait-timeout <ms>', 'with --wait: give up after this many ms, 1..2147483647 (default: no limit)', integer(1, 2_147_483_647))
    .action(async (task: string, flags: EnqueueFlags) => {
      if (flags.waitTimeout !== undefined && !flags.wait) throw new UsageError('--wait-timeout needs --wait');
      if (flags.delay !== undefined && flags.runAt !== undefined) throw new UsageError('give --delay or --run-at, not both');
      const options: EnqueueOptions = {};
      if (flags.queue !== undefined) options.queue = flags.queue;
      if (flags.priority !== undefined) options.priority = flags.priority;
      if (flags.delay !== undefined) options.delay = flags.delay;
      if (flags.runAt !== undefined) options.runAt = flags.runAt;
      if (flags.maxAttempts !== undefined) options.maxAttempts = flags.maxAttempts;
      if (flags.timeout !== undefined) options.timeout = flags.timeout;
      if (flags.key !== undefined) options.key = flags.key;
      if (flags.concurrencyKey !== undefined) options.concurrencyKey = flags.concurrencyKey;
      const payload = flags.payload === undefined ? null : await readJsonOption('--payload', flags.payload);
      const tasks = flags.tasks ? await loadTasks(flags.tasks) : undefined;
      if (tasks && !tasks.some((t) => t.name === task)) {
        throw new UsageError(`unknown task "${task}"; known tasks: ${tasks.map((t) => t.name).sort().join(', ')}`);
      }
      await withBaton({ database: flags.database, tasks }, async (baton) => {
        // The client announces a job it inserted; a key already held returns that job, unannounced.
        let inserted: number | undefined;
        const off = baton.on('job:enqueued', (e) => (inserted = e.job.id));
        let job;
        try {
          job = await baton.enqueue(task, payload, options);
        } catch (error) {
          throw byFlag(error);
        } finally {
          off();
        }
        const created = inserted === job.id;
        if (flags.json && !flags.wait) printJson({ ...job, created });
        else if (!created) out(`job ${job.id} already exists for key ${job.key} (${displayState(job)}); not enqueued again`);
        else if (!flags.json) out(`job ${job.id} ${displayState(job)}: ${job.task} on queue ${job.queue}, run at ${job.runAt.toISOString()}`);
        if (flags.wait) await awaitResult(baton, job.id, flags);
      });
    });
}

/** `--wait`: prints the job's result (JSON), or why it has none, and sets the exit code. */
async function awaitResult(baton: Baton, id: number, flags: EnqueueFlags): Promise<void> {
  try {
    const result = await baton.waitForResult(id, flags.waitTimeout === undefined ? {} : { timeout: flags.waitTimeout });
    if (flags.json) printJson({ id, state: 'completed', result });
    else out(JSON.stringify(result));
  } catch (error) {
    if (!(error instanceof WaitError)) throw error;
    if (flags.json) printJson({ id, state: error.job?.state ?? null, error: error.message });
    else err(`baton: ${error.message}`);
    process.exitCode = error instanceof WaitTimeoutError ? 124 : 1;
  }
}

/** Any integer: the client checks the range. */
const anyInteger = integer(Number.MIN_SAFE_INTEGER);
