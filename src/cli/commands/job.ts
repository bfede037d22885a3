import { Command } from 'commander';
import { jobId, withBaton, withDatabase } from '../options.js';
import { jobDetail, out, printJson } from '../output.js';

/** `baton job ID`: every field of one job, with its errors. */
export function jobCommand(): Command {
  return withDatabase(new Command('job'))
    .description('show one job')
    .argument('<id>', 'job id', jobId)
    .option('--json', 'print the job as JSON')
    .action(async (id: number, flags: { database?: string; json?: boolean }) => {
      const job = await withBaton({ database: flags.database, readOnly: true }, (baton) => baton.getJob(id));
      if (flags.json) printJson(job);
      else out(jobDetail(job));
    });
}
