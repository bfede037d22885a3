import { Command, Option } from 'commander';
import { JOB_STATES, type JobState } from '../../job/types.js';
import { integer, withBaton, withDatabase } from '../options.js';
import { jobsTable, out, printJson } from '../output.js';

interface JobsFlags {
  state?: JobState;
  queue?: string;
  task?: string;
  limit: number;
  database?: string;
  json?: boolean;
}

/** `baton jobs`: the newest jobs, filtered by state, queue and task. */
export function jobsCommand(): Command {
  return withDatabase(new Command('jobs'))
    .description('list jobs, newest first')
    .addOption(new Option('--state <state>', 'only jobs in this stored state').choices(JOB_STATES))
    .option('--queue <name>', 'only jobs of this queue')
    .option('--task <name>', 'only jobs of this task')
    .option('--limit <n>', 'at most this many (1..1000)', integer(1, 1000), 50)
    .option('--json', 'print a JSON array of jobs')
    .action(async (flags: JobsFlags) => {
      const jobs = await withBaton({ database: flags.database, readOnly: true }, (baton) =>
        baton.listJobs({
          limit: flags.limit,
          ...(flags.state ? { state: flags.state } : {}),
          ...(flags.queue ? { queue: flags.queue } : {}),
          ...(flags.task ? { task: flags.task } : {}),
        }),
      );
      if (flags.json) printJson(jobs);
      else if (jobs.length === 0) out('no jobs');
      else out(jobsTable(jobs));
    });
}
