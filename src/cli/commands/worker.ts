import { Command } from 'commander';
import type { WorkerEvents } from '../../observe/events.js';
import type { WorkerOptions } from '../../worker/options.js';
import { loadTasks } from '../load-tasks.js';
import { collect, integer, milliseconds, openBaton, withDatabase } from '../options.js';
import { out } from '../output.js';
import { exitWhenIdle, onShutdownSignals } from '../signals.js';

interface WorkerFlags {
  tasks: string;
  database?: string;
  concurrency?: number;
  queue?: string[];
  drainTimeout?: number;
  abortGrace?: number;
  cancelGrace?: number;
  leaseTtl?: number;
  pollInterval?: number;
  json?: boolean;
}

/** Events printed as JSON lines with `--json`. */
const EVENTS: Array<keyof WorkerEvents> = [
  'job:claimed',
  'job:checkpoint',
  'job:completed',
  'job:failed',
  'job:cancelled',
  'job:released',
  'job:aborted',
  'lease:lost',
];

/**
 * `baton worker --tasks FILE`: runs a worker until SIGTERM or SIGINT. The first
 * signal stops it gracefully (stop claiming, drain up to --drain-timeout, abort
 * the rest and wait --abort-grace, release what is left with its checkpoint),
 * closes the database and exits 0; a second signal skips straight to the release.
 */
export function workerCommand(): Command {
  return withDatabase(new Command('worker'))
    .description('run a worker for the tasks a module exports, until SIGTERM/SIGINT')
    .requiredOption('--tasks <file>', 'module exporting the tasks (.ts loads without a build)')
    .option('--concurrency <n>', 'jobs run at once (default: 10)', integer(1, 1000))
    .option('--queue <name>', 'queue to claim from; repeat for several (default: default)', collect)
    .option('--drain-timeout <ms>', 'shutdown: time running jobs get to finish (default: 20000)', milliseconds)
    .option('--abort-grace <ms>', 'shutdown and timeout: time an aborted job gets to clean up (default: 5000)', milliseconds)
    .option('--cancel-grace <ms>', 'time a cancelled job gets before it is recorded cancelled anyway (default: 5000)', milliseconds)
    .option('--lease-ttl <ms>', 'lease length; a crashed worker\'s jobs are taken over after it (default: 30000)', milliseconds)
    .option('--poll-interval <ms>', 'safety-net poll for due jobs (default: 1000)', milliseconds)
    .option('--json', 'print one JSON line per job event on stdout')
    .action(async (flags: WorkerFlags) => {
      const tasks = await loadTasks(flags.tasks);
      const baton = await openBaton({ database: flags.database, tasks }, 'info');
      const options: WorkerOptions = { tasks };
      if (flags.concurrency !== undefined) options.concurrency = flags.concurrency;
      if (flags.queue) options.queues = flags.queue;
      if (flags.drainTimeout !== undefined) options.drainTimeout = flags.drainTimeout;
      if (flags.abortGrace !== undefined) options.abortGrace = flags.abortGrace;
      if (flags.cancelGrace !== undefined) options.cancelGrace = flags.cancelGrace;
      if (flags.leaseTtl !== undefined) options.leaseTtl = flags.leaseTtl;
      if (flags.pollInterval !== undefined) options.pollInterval = flags.pollInterval;
      let worker;
      try {
        worker = baton.worker(options);
      } catch (error) {
        await baton.close();
        throw error;
      }
      if (flags.json) {
        for (const name of EVENTS) {
          worker.on(name, (payload) => {
            const p = payload as { job: { id: number; task: string; attempt: number }; message?: string; reason?: unknown; retryAt?: Date | null };
            const reason = p.reason instanceof Error ? (p.reason as { code?: string }).code ?? p.reason.message : p.reason;
            out(JSON.stringify({ event: name, jobId: p.job.id, task: p.job.task, attempt: p.job.attempt, ...(p.message ? { message: p.message } : {}), ...(reason !== undefined ? { reason } : {}), ...(p.retryAt !== undefined ? { retryAt: p.retryAt } : {}) }));
          });
        }
      }

      // A promise a handler left rejected and unhandled would end the process (Node's
      // default) with every job mid-run: log it and keep working instead.
      process.on('unhandledRejection', (reason) => {
        baton.logger.error({ err: reason }, 'unhandled promise rejection (left by a job handler?); the worker keeps going');
      });
      const stopped = new Promise<void>((resolve) => {
        onShutdownSignals({
          first: (signal) => {
            if (flags.json) out(JSON.stringify({ event: 'worker:stopping', signal }));
            else process.stderr.write(`${signal}: stopping gracefully (drain, then release); send it again to release at once\n`);
            void worker.stop().then(async (summary) => {
              await baton.close();
              if (flags.json) out(JSON.stringify({ event: 'worker:stopped', ...summary }));
              else out(`worker stopped: ${summary.finished} finished, ${summary.released} released${summary.abandoned ? `, ${summary.abandoned} abandoned` : ''}`);
              resolve();
            });
          },
          again: () => void worker.stop({ now: true }),
        });
      });
      await worker.start();
      const o = worker.options;
      if (flags.json) out(JSON.stringify({ event: 'worker:started', workerId: worker.id, pid: process.pid, tasks: tasks.map((t) => t.name), queues: o.queues, concurrency: o.concurrency }));
      else out(`worker ${worker.id} running ${tasks.map((t) => t.name).join(', ')} from ${o.queues.join(', ')} (concurrency ${o.concurrency}); Ctrl-C to stop`);
      await stopped;
      process.exitCode = 0;
      exitWhenIdle();
    });
}
