import { Command } from 'commander';
import { jobId, withBaton, withDatabase } from '../options.js';
import { jobDetail, out, printJson } from '../output.js';

/** `baton job ID`: every field of one job, with its errors and its timeline (`--json`: the job with a `timeline` array). */
export function jobCommand(): Command {
  return withDatabase(new Command('job'))
    .description('show one job')
    .argument('<id>', 'job id', jobId)
    .option('--json', 'print the job, with its timeline, as JSON')
    .action(async (id: number, flags: { database?: string; json?: boolean }) => {
      const { job, timeline } = await withBaton({ database: flags.database, readOnly: true }, (baton) => baton.getJobTimeline(id));
      if (flags.json) printJson({ ...job, timeline });
      else out(jobDetail(job, Date.now(), timeline));
    });
}
