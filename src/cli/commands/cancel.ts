import { Command } from 'commander';
import { bulkFilter, idOrFilter, printBulk, withBulkOptions, withProgress, type BulkFlags } from '../bulk-options.js';
import { byFlag, jobId, withBaton, withDatabase } from '../options.js';
import { err, out, plural, printable, printJson } from '../output.js';

/**
 * `baton cancel ID`: queued → cancelled at once; running → the request is stored
 * and the worker holding the job aborts it; already finished → nothing changes,
 * the message names its state, and the exit code is 1. `baton cancel --queue q
 * [--dry-run]`: every queued or running job matching the filter, in batches.
 */
export function cancelCommand(): Command {
  return withBulkOptions(withDatabase(new Command('cancel')), 'cancel', ['queued', 'running'])
    .description('cancel a job (a running job is aborted by its worker), or every one matching filter flags')
    .argument('[id]', 'job id (or give filter flags)', jobId)
    .option('--reason <text>', 'why; the handler sees it as CancelledError.reason')
    .action(async (id: number | undefined, flags: BulkFlags & { reason?: string; database?: string }) => {
      idOrFilter('cancel', id, flags);
      if (id === undefined) {
        const reason = { by: 'cli', ...(flags.reason === undefined ? {} : { reason: flags.reason }) };
        const result = await withBaton({ database: flags.database }, (baton) => withProgress(flags, 'cancel', (options) => baton.jobs.cancelMany(bulkFilter(flags), { ...options, ...reason })));
        printBulk(flags, 'cancel', result, () => {
          const parts = [];
          if (result.cancelled > 0) parts.push(`${plural(result.cancelled, 'queued job')} cancelled`);
          if (result.requested > 0) parts.push(`cancel requested for ${plural(result.requested, 'running job')} (their workers abort them now)`);
          return parts.join('; ') || 'nothing to cancel (the matching jobs finished meanwhile)';
        });
        return;
      }
      // The client's refusal of the reason (its only checked argument) names the flag: "--reason: …".
      const { outcome, job } = await withBaton({ database: flags.database }, (baton) => baton.cancel(id, flags.reason, { by: 'cli' })).catch((error: unknown) => {
        throw byFlag(error, [undefined]);
      });
      if (flags.json) printJson({ outcome, job });
      if (outcome === 'unchanged') {
        err(`baton: job ${id} is already ${job.state}; nothing to cancel`);
        process.exitCode = 1;
        return;
      }
      if (flags.json) return;
      if (outcome === 'cancelled') out(`job ${id} cancelled`);
      else out(`cancel requested for job ${id} (running on ${printable(job.leaseOwner ?? 'a worker')}); its worker aborts it now, or ends it without running if it was claimed ahead and has not started`);
    });
}
