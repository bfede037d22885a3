import { Command } from 'commander';
import { jobId, withBaton, withDatabase } from '../options.js';
import { jobDetail, out, printJson } from '../output.js';

/** `baton job ID`: every field of one job, with its errors, its timeline and its step log (`--json`: the job with `timeline` and `steps` arrays). */
export function jobCommand(): Command {
  return withDatabase(new Command('job'))
    .description('show one job')
    .argument('<id>', 'job id', jobId)
    .option('--json', 'print the job, with its timeline and steps, as JSON')
    .action(async (id: number, flags: { database?: string; json?: boolean }) => {
      const { job, timeline, steps } = await withBaton({ database: flags.database, readOnly: true }, async (baton) => ({ ...(await baton.getJobTimeline(id)), steps: await baton.getJobSteps(id) }));
      if (flags.json) printJson({ ...job, timeline, steps });
      else out(jobDetail(job, Date.now(), timeline, steps));
    });
}
