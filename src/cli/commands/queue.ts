import { Command, InvalidArgumentError } from 'commander';
import { withBaton, withDatabase } from '../options.js';
import { out, printable, printJson } from '../output.js';

const queueName = (value: string) => {
  if (value.length === 0) throw new InvalidArgumentError('a queue name is required.');
  return value;
};

/** `baton queue pause|resume NAME`: stop or restart claims from a queue, fleet-wide. */
export function queueCommand(): Command {
  const command = new Command('queue').description('pause or resume a queue for every worker');
  command.addCommand(
    withDatabase(new Command('pause'))
      .description('stop every worker claiming from the queue (running jobs go on; stored, so it outlives restarts)')
      .argument('<name>', 'queue name', queueName)
      .option('--force', 'pause a queue Baton does not know yet (no job, no worker serving it)')
      .option('--json', 'print { queue, paused, changed } as JSON')
      .action(async (name: string, flags: { database?: string; force?: boolean; json?: boolean }) => {
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.pause(name, { force: flags.force ?? false }));
        if (flags.json) printJson(result);
        else out(result.changed ? `queue ${printable(name)} paused: no worker claims from it until it is resumed` : `queue ${printable(name)} was already paused`);
      }),
  );
  command.addCommand(
    withDatabase(new Command('resume'))
      .description('let workers claim from the queue again (they are woken at once)')
      .argument('<name>', 'queue name', queueName)
      .option('--json', 'print { queue, paused, changed } as JSON')
      .action(async (name: string, flags: { database?: string; json?: boolean }) => {
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.resume(name));
        if (flags.json) printJson(result);
        else out(result.changed ? `queue ${printable(name)} resumed` : `queue ${printable(name)} was not paused`);
      }),
  );
  return command;
}
