import { Command, InvalidArgumentError } from 'commander';
import { ConfigError } from '../../errors.js';
import { listen, refuseOpenNetwork, tokensFromEnv } from '../../http/listen.js';
import type { StopSummary, WorkerEvents } from '../../worker/events.js';
import { resolveWorkerOptions, type WorkerOptions } from '../../worker/options.js';
import type { StateRetention } from '../../maintenance/retention.js';
import { loadWorkerModule } from '../load-tasks.js';
import { CliError, collectQueue, integer, milliseconds, openBaton, UsageError, withDatabase } from '../options.js';
import { err, out, plural, printable, printJsonLine } from '../output.js';
import { exitWhenIdle, onShutdownSignals } from '../signals.js';

interface WorkerFlags {
  tasks: string;
  database?: string;
  concurrency?: number;
  prefetch?: number;
  queue?: string[];
  drainTimeout?: number;
  abortGrace?: number;
  cancelGrace?: number;
  leaseTtl?: number;
  pollInterval?: number;
  json?: boolean;
  /** Set by --quiet: no outcome line per completed job. */
  quiet?: boolean;
  http?: number;
  httpHost?: string;
  retention?: StateRetention;
  /** false with --no-prune. */
  prune?: boolean;
}

/** Parser of a repeatable `--retention STATE=MS|forever` into one {@link StateRetention}. */
function retentionFlag(value: string, previous: StateRetention = {}): StateRetention {
  const match = /^(completed|failed|cancelled)=(forever|\d+)$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError(`"${value}" is not STATE=MS or STATE=forever (STATE: completed, failed or cancelled).`);
  if (previous[match[1] as keyof StateRetention] !== undefined) throw new InvalidArgumentError(`${match[1]} is given twice: one value per state.`);
  return { ...previous, [match[1]!]: match[2] === 'forever' ? false : Number(match[2]) };
}

/**
 * The worker's `queues` from the repeated `--queue` values: names (`--queue emails`: one
 * pool) or, when every value is NAME=SLOTS (`--queue emails=10 --queue reports=2`), the
 * slots per queue. A value holding "=" is NAME=SLOTS (a queue whose name holds "=" is
 * given as NAME=SLOTS too: `a=b=3`), so `emails=abc` or `emails=` is refused rather than
 * taken for a queue of that name.
 * @throws UsageError (exit 2) when a value with "=" does not end in whole-number slots, some values give slots and others do not, or a queue is given twice
 */
export function workerQueues(values: string[]): string[] | Record<string, number> {
  const bad = values.find((value) => value.includes('=') && !/^.+=\d+$/.test(value));
  if (bad !== undefined) throw new UsageError(`--queue: ${JSON.stringify(bad)} is not NAME=SLOTS (SLOTS a whole number, e.g. --queue emails=10)`);
  const parsed = values.map((value) => /^(.+)=(\d+)$/.exec(value));
  if (parsed.every((m) => m === null)) return values;
  if (parsed.some((m) => m === null)) {
    throw new UsageError(`--queue: give slots for every queue or for none (NAME=SLOTS, e.g. --queue emails=10 --queue reports=2); ${JSON.stringify(values[parsed.indexOf(null)])} has none`);
  }
  const slots: Record<string, number> = {};
  for (const [, name, n] of parsed as RegExpExecArray[]) {
    if (Object.hasOwn(slots, name!)) throw new UsageError(`--queue: queue ${JSON.stringify(name)} is given twice`);
    slots[name!] = Number(n);
  }
  return slots;
}

/** The flag of each worker option the command sets from one (`queues` ← `--queue`). */
const FLAG_OF: Partial<Record<keyof WorkerOptions, string>> = {
  concurrency: '--concurrency',
  prefetch: '--prefetch',
  queues: '--queue',
  drainTimeout: '--drain-timeout',
  abortGrace: '--abort-grace',
  cancelGrace: '--cancel-grace',
  leaseTtl: '--lease-ttl',
  pollInterval: '--poll-interval',
  retention: '--retention',
};

/**
 * A worker's refusal of options the command took from flags, named by the flags
 * (`worker option leaseTtl: must be at least 100 ms` → `--lease-ttl: must be at least
 * 100 ms`; a queue's index is left out, as the flag repeats, its name kept): a UsageError, exit 2.
 * A refusal about any other option (the tasks file's tasks, schedules or services), or
 * one without issues, comes back unchanged.
 */
export function byWorkerFlag(error: unknown): unknown {
  if (!(error instanceof ConfigError) || error.issues.length === 0) return error;
  const flags = error.issues.map((i) => FLAG_OF[i.path[0] as keyof WorkerOptions]);
  if (flags.some((flag) => flag === undefined)) return error;
  return new UsageError(error.issues.map((issue, n) => {
    // A queue's index is left out (the flag repeats); its name (NAME=SLOTS) is kept.
    const rest = issue.path[0] === 'queues' ? issue.path.slice(1).filter((p) => typeof p === 'string') : issue.path.slice(1);
    return `${flags[n]}${rest.length > 0 ? ` ${rest.join('.')}` : ''}: ${issue.message}`;
  }).join('; '));
}

/** Events printed as JSON lines with `--json`. */
const EVENTS: Array<keyof WorkerEvents> = [
  'job:claimed',
  'job:checkpoint',
  'job:completed',
  'job:failed',
  'job:cancelled',
  'job:released',
  'job:snoozed',
  'job:aborted',
  'lease:lost',
];

/**
 * `baton worker --tasks FILE`: runs a worker until SIGTERM or SIGINT. The first
 * signal stops it gracefully (stop claiming, drain up to --drain-timeout, abort
 * the rest and wait --abort-grace, release what is left with its checkpoint),
 * closes the database and exits 0; a second signal skips straight to the release.
 * (A repeat within 200 ms is taken for npm's copy of the same Ctrl-C: see signals.ts.)
 * Logs go to stderr (pretty in a terminal, JSON otherwise: observe/logger.ts), with
 * one line per job outcome (observe/log-job-outcomes.ts; --quiet leaves out completed jobs). With
 * --http, `GET /readyz` answers 503 from the first signal on, while the worker drains,
 * and `/metrics` counts every job the worker ran, those finished before it listened too.
 */
export function workerCommand(): Command {
  return withDatabase(new Command('worker'))
    .description('run a worker for the tasks a module exports, until SIGTERM/SIGINT')
    .requiredOption('--tasks <file>', 'module exporting the tasks, and any schedules (defineSchedule), services (defineService) and queues (defineQueue) (.ts loads without a build)')
    .option('--concurrency <n>', 'jobs run at once (default: 10)', integer(1, 10_000))
    .option('--prefetch <n>', 'jobs claimed ahead of a free slot, held under this worker\'s lease until one frees: more jobs per claim for short jobs (default: 0)', integer(0, 10_000))
    .option('--queue <name[=slots]>', 'queue to claim from; repeat for several; NAME=SLOTS gives each queue its own slots, --concurrency then caps their sum (default: default and the queues the tasks name)', collectQueue)
    .option('--drain-timeout <ms>', 'shutdown: time running jobs get to finish (default: 20000)', milliseconds)
    .option('--abort-grace <ms>', 'shutdown and timeout: time an aborted job gets to clean up (default: 5000)', milliseconds)
    .option('--cancel-grace <ms>', 'time a cancelled job gets before it is recorded cancelled anyway (default: 5000)', milliseconds)
    .option('--lease-ttl <ms>', 'lease length; a crashed worker\'s jobs are taken over after it (default: 30000)', milliseconds)
    .option('--poll-interval <ms>', 'safety-net poll for due jobs (default: 1000)', milliseconds)
    .option('--retention <state=ms>', 'keep finished jobs of a state (completed, failed, cancelled) this many ms, or "forever"; repeat for several (default: completed=86400000 cancelled=86400000 failed=604800000)', retentionFlag)
    .option('--no-prune', 'this worker never runs the pruner of finished jobs (one worker of the fleet prunes at a time)')
    .option('--no-scheduler', 'do not enqueue the ticks of stored schedules (on by default, exactly once per tick across workers)')
    .option('--json', 'print one JSON line per job event on stdout')
    .option('--quiet', 'do not log a line per completed job (failed attempts, cancels, releases and snoozes are still logged)')
    .option('--http <port>', 'also serve the HTTP API, /metrics and the dashboard on this port (tokens: $BATON_ADMIN_TOKEN, $BATON_API_TOKEN)', integer(0, 65535))
    .option('--http-host <host>', 'address for --http; other than loopback needs a token (default: 127.0.0.1)')
    .action(async (flags: WorkerFlags & { scheduler?: boolean }) => {
      if (flags.prune === false && flags.retention) throw new UsageError('--no-prune and --retention contradict each other: a worker that never prunes applies no retention');
      const { tasks, schedules, services, queues } = await loadWorkerModule(flags.tasks);
      const tokens = tokensFromEnv({});
      // Before the database is created or migrated (and the worker started).
      if (flags.http !== undefined) refuseOpenNetwork(flags.httpHost ?? '127.0.0.1', tokens);
      // Loaded only with --http: a worker that serves nothing starts without hono and prom-client.
      const createHttpApp = flags.http === undefined ? undefined : (await import('../../http/app.js')).createHttpApp;
      const options: WorkerOptions = { tasks, schedules, services, scheduler: flags.scheduler !== false };
      if (flags.concurrency !== undefined) options.concurrency = flags.concurrency;
      if (flags.prefetch !== undefined) options.prefetch = flags.prefetch;
      if (flags.queue) options.queues = workerQueues(flags.queue);
      if (flags.drainTimeout !== undefined) options.drainTimeout = flags.drainTimeout;
      if (flags.abortGrace !== undefined) options.abortGrace = flags.abortGrace;
      if (flags.cancelGrace !== undefined) options.cancelGrace = flags.cancelGrace;
      if (flags.leaseTtl !== undefined) options.leaseTtl = flags.leaseTtl;
      if (flags.pollInterval !== undefined) options.pollInterval = flags.pollInterval;
      if (flags.prune === false) options.retention = false;
      else if (flags.retention) options.retention = flags.retention;
      if (flags.quiet) options.quiet = true;
      // Checked before the database is opened (or created and migrated): a bad flag changes nothing.
      try {
        resolveWorkerOptions(options);
      } catch (error) {
        throw byWorkerFlag(error);
      }
      const baton = await openBaton({ database: flags.database, tasks, queues }, 'info');
      let worker;
      let app;
      try {
        worker = baton.worker(options);
        // Before start(): the app's metrics listen to the worker from here on, so
        // /metrics counts every job it runs, those of its first claims included.
        app = createHttpApp?.(baton, { ...tokens, tasks });
      } catch (error) {
        await baton.close();
        throw error;
      }
      if (flags.json) {
        for (const name of EVENTS) {
          worker.on(name, (payload) => {
            const p = payload as { job: { id: number; task: string; attempt: number }; message?: string; reason?: unknown; retryAt?: Date | null; abandoned?: boolean };
            const reason = p.reason instanceof Error ? (p.reason as { code?: string }).code ?? p.reason.message : p.reason;
            printJsonLine({ event: name, jobId: p.job.id, task: p.job.task, attempt: p.job.attempt, ...(p.message ? { message: p.message } : {}), ...(reason !== undefined ? { reason } : {}), ...(p.retryAt !== undefined ? { retryAt: p.retryAt } : {}), ...(p.abandoned ? { abandoned: true } : {}) });
          });
        }
        worker.on('jobs:pruned', (e) => printJsonLine({ event: 'jobs:pruned', ...e }));
        worker.on('schedule:overlapped', (e) => printJsonLine({ event: 'schedule:overlapped', schedule: e.schedule, scheduledFor: e.scheduledFor, jobId: e.job.id }));
      }

      // A promise a handler left rejected and unhandled would end the process (Node's
      // default) with every job mid-run: log it and keep working instead.
      process.on('unhandledRejection', (reason) => {
        baton.logger.error({ err: reason }, 'unhandled promise rejection (left by a job handler?); the worker keeps going');
      });
      let releasedAbandoned = 0;
      let http: { url: string; close(): Promise<void> } | undefined;
      worker.on('job:released', (e) => void (e.abandoned && releasedAbandoned++));
      // Listening before the worker claims: a port that cannot be had fails the command
      // with nothing claimed (until start, /readyz answers 503 "worker new").
      if (app && flags.http !== undefined) {
        const host = flags.httpHost ?? '127.0.0.1';
        try {
          http = await listen(app.fetch, { host, port: flags.http, tokens });
        } catch (error) {
          await baton.close();
          throw new CliError(`--http ${flags.http}: cannot listen on ${host}: ${(error as Error).message}`);
        }
        if (flags.json) printJsonLine({ event: 'http:listening', url: http.url });
        else out(`serving the API and dashboard at ${http.url}`);
      }
      const stopped = new Promise<void>((resolve) => {
        onShutdownSignals({
          first: (signal) => {
            // stop() emits worker:stopping at once, with what it drains and hands back.
            if (flags.json) worker.on('worker:stopping', (e) => printJsonLine({ event: 'worker:stopping', signal, running: e.running, waiting: e.waiting }));
            else err(`${signal}: stopping gracefully (drain, then release); send it again to release at once`);
            void worker.stop().then(async (summary) => {
              await http?.close();
              await baton.close();
              if (flags.json) printJsonLine({ event: 'worker:stopped', ...summary });
              else out(`worker stopped: ${stopSummaryText(summary, releasedAbandoned)}`);
              resolve();
            });
          },
          again: (signal, count) => {
            if (flags.json) printJsonLine({ event: 'worker:stop-now', signal });
            else if (count === 2) err(`${signal}: second signal: skipping the drain, releasing running jobs now`);
            else err(`${signal}: already releasing running jobs`);
            void worker.stop({ now: true });
          },
        });
      });
      // Said when the worker starts claiming, so it comes before the first job:claimed
      // (start() resolves only after its first claim).
      worker.on('worker:started', () => {
        const o = worker.options;
        // Prefetch is named only when above 0: a default worker's line and event do not mention it.
        const prefetch = o.prefetch > 0 ? { prefetch: o.prefetch } : {};
        if (flags.json) printJsonLine({ event: 'worker:started', workerId: worker.id, pid: process.pid, tasks: tasks.map((t) => t.name), queues: o.queueSlots ?? o.queues, concurrency: o.concurrency, ...prefetch });
        else out(`worker ${printable(worker.id)} running ${tasks.map((t) => printable(t.name)).join(', ')} from ${o.queues.map((q) => printable(q) + (o.queueSlots ? `=${o.queueSlots[q]}` : '')).join(', ')} (concurrency ${o.concurrency}${o.prefetch > 0 ? `, prefetch ${o.prefetch}` : ''}); Ctrl-C to stop`);
      });
      await worker.start();
      await stopped;
      process.exitCode = 0;
      exitWhenIdle();
    });
}

/**
 * "2 finished, 1 released", for the line the worker prints when it stopped. A
 * released job whose handler never returned counts in `released` and in
 * `abandoned`; it is said once ("1 released (its handler had not returned and was
 * abandoned)"), not as two jobs. Jobs not handed back (`unreleased`) are named.
 * @param releasedAbandoned - released jobs whose handler had not returned (`job:released` with `abandoned`)
 */
export function stopSummaryText(summary: Omit<StopSummary, 'unreleased'> & { unreleased?: number[] }, releasedAbandoned = 0): string {
  const { finished, released, abandoned, unreleased = [] } = summary;
  let text = `${finished} finished, ${released} released`;
  const among = Math.min(releasedAbandoned, released, abandoned);
  if (among > 0) {
    if (among === released) text += released === 1 ? ' (its handler had not returned and was abandoned)' : ' (their handlers had not returned and were abandoned)';
    else text += ` (${among} of them: the handler had not returned and was abandoned)`;
  }
  // Handlers abandoned without a release (past a timeout's or a cancel's grace: their job is already recorded).
  const others = abandoned - among;
  if (others > 0) text += `; ${plural(others, 'other handler')} had not returned and ${others === 1 ? 'was' : 'were'} abandoned`;
  if (unreleased.length > 0) {
    text += `; ${unreleased.length} not handed back (${unreleased.length === 1 ? 'job' : 'jobs'} ${unreleased.join(', ')}: the database could not be reached; another worker takes ${unreleased.length === 1 ? 'it' : 'them'} over when the lease expires)`;
  }
  return text;
}
