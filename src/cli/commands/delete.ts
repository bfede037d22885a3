import { Command } from 'commander';
import { jobId, withBaton, withDatabase } from '../options.js';
import { out, printJson } from '../output.js';

/** `baton delete ID`: removes a job that is not running (a running one: exit 1, cancel it first). */
export function deleteCommand(): Command {
  return withDatabase(new Command('delete'))
    .description('delete a job that is not running')
    .argument('<id>', 'job id', jobId)
    .option('--json', 'print { id, state } (the state it had) as JSON')
    .action(async (id: number, flags: { database?: string; json?: boolean }) => {
      const deleted = await withBaton({ database: flags.database }, (baton) => baton.jobs.delete(id));
      if (flags.json) printJson(deleted);
      else out(`job ${id} deleted (it was ${deleted.state})`);
    });
}
