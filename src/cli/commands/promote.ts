import { Command } from 'commander';
import { notPromotedMessage } from '../../client/promote.js';
import { jobId, withBaton, withDatabase } from '../options.js';
import { err, out, printable, printJson } from '../output.js';

/**
 * `baton promote ID`: a delayed, retrying or snoozed job (queued, runAt in the future)
 * runs now; idle workers claim it at once. Any other job: nothing changes, the message
 * names its state, and the exit code is 1 (as `baton cancel` of a finished job).
 */
export function promoteCommand(): Command {
  return withDatabase(new Command('promote'))
    .description('run a delayed, retrying or snoozed job now')
    .argument('<id>', 'job id', jobId)
    .option('--json', 'print { outcome, job } as JSON')
    .action(async (id: number, flags: { database?: string; json?: boolean }) => {
      const { outcome, job } = await withBaton({ database: flags.database }, (baton) => baton.promote(id));
      if (flags.json) printJson({ outcome, job });
      if (outcome === 'unchanged') {
        err(`baton: ${notPromotedMessage(job, Date.now())}`);
        process.exitCode = 1;
        return;
      }
      if (!flags.json) out(`job ${id} promoted: due now (${printable(job.task)} on queue ${printable(job.queue)})`);
    });
}
