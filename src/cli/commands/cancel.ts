import { Command } from 'commander';
import { jobId, withBaton, withDatabase } from '../options.js';
import { err, out, printable, printJson } from '../output.js';

/**
 * `baton cancel ID`: queued → cancelled at once; running → the request is stored
 * and the worker holding the job aborts it; already finished → nothing changes,
 * the message names its state, and the exit code is 1.
 */
export function cancelCommand(): Command {
  return withDatabase(new Command('cancel'))
    .description('cancel a job (a running job is aborted by its worker)')
    .argument('<id>', 'job id', jobId)
    .option('--reason <text>', 'why; the handler sees it as CancelledError.reason')
    .option('--json', 'print { outcome, job } as JSON')
    .action(async (id: number, flags: { reason?: string; database?: string; json?: boolean }) => {
      const { outcome, job } = await withBaton({ database: flags.database }, (baton) => baton.cancel(id, flags.reason));
      if (flags.json) printJson({ outcome, job });
      if (outcome === 'unchanged') {
        err(`baton: job ${id} is already ${job.state}; nothing to cancel`);
        process.exitCode = 1;
        return;
      }
      if (flags.json) return;
      if (outcome === 'cancelled') out(`job ${id} cancelled`);
      else out(`cancel requested for job ${id} (running on ${printable(job.leaseOwner ?? 'a worker')}); its worker aborts it now`);
    });
}
