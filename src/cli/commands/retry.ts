import { Command } from 'commander';
import { jobId, withBaton, withDatabase } from '../options.js';
import { out, printable, printJson } from '../output.js';

/** `baton retry ID`: a failed or cancelled job runs again (attempts start over; its errors are kept). */
export function retryCommand(): Command {
  return withDatabase(new Command('retry'))
    .description('run a failed or cancelled job again')
    .argument('<id>', 'job id', jobId)
    .option('--json', 'print the job as JSON')
    .action(async (id: number, flags: { database?: string; json?: boolean }) => {
      const job = await withBaton({ database: flags.database }, (baton) => baton.retry(id));
      if (flags.json) printJson(job);
      else out(`job ${id} queued again (${printable(job.task)} on queue ${printable(job.queue)})`);
    });
}
