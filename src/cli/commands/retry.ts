import { Command } from 'commander';
import { bulkFilter, idOrFilter, printBulk, withBulkOptions, withProgress, type BulkFlags } from '../bulk-options.js';
import { jobId, withBaton, withDatabase } from '../options.js';
import { out, plural, printable, printJson } from '../output.js';

/**
 * `baton retry ID`: a failed or cancelled job runs again (attempts start over; its
 * errors are kept), resuming from its checkpoint; `--fresh` clears checkpoint and
 * progress first. `baton retry --state failed --queue q [--dry-run] [--fresh]`: every
 * failed or cancelled job matching the filter, in batches.
 */
export function retryCommand(): Command {
  return withBulkOptions(withDatabase(new Command('retry')), 'retry', ['failed', 'cancelled'])
    .description('run a failed or cancelled job again, or every one matching filter flags (each resumes from its checkpoint unless --fresh)')
    .argument('[id]', 'job id (or give filter flags)', jobId)
    .option('--fresh', 'start from scratch: clear the checkpoint and progress (default: resume from the checkpoint)')
    .action(async (id: number | undefined, flags: BulkFlags & { database?: string; fresh?: boolean }) => {
      idOrFilter('retry', id, flags);
      const fresh = flags.fresh === true ? { fresh: true } : {};
      if (id === undefined) {
        const result = await withBaton({ database: flags.database }, (baton) => withProgress(flags, 'retry', (options) => baton.jobs.retryMany(bulkFilter(flags), { ...options, ...fresh })));
        const skipped = result.matched - result.retried;
        printBulk(flags, 'retry', result, () =>
          `${plural(result.retried, 'job')} queued again${skipped > 0 ? `; ${skipped} skipped (changed state meanwhile, or a queued or running job holds its key)` : ''}`,
        );
        return;
      }
      const job = await withBaton({ database: flags.database }, (baton) => baton.retry(id, fresh));
      if (flags.json) printJson(job);
      else out(`job ${id} queued again (${printable(job.task)} on queue ${printable(job.queue)})${flags.fresh ? ', from scratch' : ''}`);
    });
}
