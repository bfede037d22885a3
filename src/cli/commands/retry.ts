import { Command } from 'commander';
import { bulkFilter, idOrFilter, printBulk, withBulkOptions, withProgress, type BulkFlags } from '../bulk-options.js';
import { jobId, withBaton, withDatabase } from '../options.js';
import { out, plural, printable, printJson } from '../output.js';

/**
 * `baton retry ID`: a failed or cancelled job runs again (attempts start over; its
 * errors are kept). `baton retry --state failed --queue q [--dry-run]`: every failed
 * or cancelled job matching the filter, in batches.
 */
export function retryCommand(): Command {
  return withBulkOptions(withDatabase(new Command('retry')), 'retry', ['failed', 'cancelled'])
    .description('run a failed or cancelled job again, or every one matching filter flags')
    .argument('[id]', 'job id (or give filter flags)', jobId)
    .action(async (id: number | undefined, flags: BulkFlags & { database?: string }) => {
      idOrFilter('retry', id, flags);
      if (id === undefined) {
        const result = await withBaton({ database: flags.database }, (baton) => withProgress(flags, 'retry', (options) => baton.jobs.retryMany(bulkFilter(flags), options)));
        const skipped = result.matched - result.retried;
        printBulk(flags, 'retry', result, () =>
          `${plural(result.retried, 'job')} queued again${skipped > 0 ? `; ${skipped} skipped (changed state meanwhile, or a queued or running job holds its key)` : ''}`,
        );
        return;
      }
      const job = await withBaton({ database: flags.database }, (baton) => baton.retry(id));
      if (flags.json) printJson(job);
      else out(`job ${id} queued again (${printable(job.task)} on queue ${printable(job.queue)})`);
    });
}
