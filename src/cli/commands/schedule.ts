import { Command, InvalidArgumentError, Option } from 'commander';
import { defineSchedule, OVERLAP_POLICIES, type Overlap } from '../../schedule/schedule.js';
import type { AnyTask } from '../../job/task.js';
import { loadTasks } from '../load-tasks.js';
import { integer, readJsonOption, UsageError, withBaton, withDatabase } from '../options.js';
import { out, printJson } from '../output.js';

interface AddFlags {
  cron?: string;
  every?: number;
  task: string;
  payload?: string;
  timezone?: string;
  queue?: string;
  catchUp?: 'none' | 'latest' | 'all';
  overlap?: Overlap;
  tasks?: string;
  database?: string;
  json?: boolean;
}

/** `baton schedule add|pause|resume|trigger|remove NAME`: manage one stored schedule. */
export function scheduleCommand(): Command {
  const command = new Command('schedule').description('add, pause, resume, trigger or remove a recurring schedule');
  command.addCommand(
    withDatabase(new Command('add'))
      .description('store a schedule (an existing one of that name is updated; its next run moves only if the cadence changed)')
      .argument('<name>', 'schedule name')
      .option('--cron <expr>', 'cron expression: 5 fields, or 6 with seconds first')
      .option('--every <ms>', 'fixed interval in ms (>= 1000)', integer(1000, 2_147_483_647))
      .requiredOption('--task <name>', 'task to enqueue')
      .option('--payload <json>', 'payload as JSON, @FILE or - (stdin)')
      .option('--timezone <tz>', 'IANA time zone of the cron fields (default UTC)')
      .option('--queue <name>', 'queue of the jobs (default "default")')
      .addOption(new Option('--catch-up <policy>', 'ticks missed during downtime').choices(['none', 'latest', 'all']))
      .addOption(new Option('--overlap <policy>', 'a tick while the previous run is still going (default skip)').choices(OVERLAP_POLICIES))
      .option('--tasks <file>', 'tasks module: refuse an unknown task name and check the payload against its schema')
      .option('--json', 'print the stored schedule as JSON')
      .action(async (name: string, flags: AddFlags) => {
        if ((flags.cron === undefined) === (flags.every === undefined)) throw new UsageError('schedule add: give exactly one of --cron and --every');
        const payload = flags.payload === undefined ? null : await readJsonOption('--payload', flags.payload);
        let task: AnyTask | string = flags.task;
        if (flags.tasks) {
          const known = await loadTasks(flags.tasks);
          const found = known.find((t) => t.name === flags.task);
          if (!found) throw new UsageError(`unknown task "${flags.task}" in ${flags.tasks}; it exports: ${known.map((t) => t.name).sort().join(', ')}`);
          task = found;
        }
        const definition = defineSchedule(name, {
          task,
          payload,
          ...(flags.cron !== undefined ? { cron: flags.cron } : {}),
          ...(flags.every !== undefined ? { every: flags.every } : {}),
          ...(flags.timezone ? { timezone: flags.timezone } : {}),
          ...(flags.queue ? { queue: flags.queue } : {}),
          ...(flags.catchUp ? { catchUp: flags.catchUp } : {}),
          ...(flags.overlap ? { overlap: flags.overlap } : {}),
        });
        const stored = await withBaton({ database: flags.database }, (baton) => baton.schedule(name, definition.options));
        if (flags.json) printJson(stored);
        else out(`schedule ${name} stored: ${stored.cadence}, next run ${stored.nextRunAt?.toISOString() ?? 'never'}`);
      }),
  );
  const simple = (verb: 'pause' | 'resume' | 'trigger' | 'remove', description: string) =>
    withDatabase(new Command(verb))
      .description(description)
      .argument('<name>', 'schedule name', (value: string) => {
        if (value.length === 0) throw new InvalidArgumentError('a schedule name is required.');
        return value;
      })
      .option('--json', 'print the result as JSON')
      .action(async (name: string, flags: { database?: string; json?: boolean }) => {
        const result = await withBaton({ database: flags.database }, async (baton) => {
          if (verb === 'trigger') return baton.schedules.trigger(name);
          await baton.schedules[verb](name);
          return null;
        });
        if (flags.json) printJson(result ?? { name, done: verb });
        else if (verb === 'trigger') out(`schedule ${name} triggered: job ${result!.id} enqueued`);
        else out(`schedule ${name} ${verb === 'remove' ? 'removed' : `${verb}d`}`);
      });
  command.addCommand(simple('pause', 'stop enqueuing ticks until resumed'));
  command.addCommand(simple('resume', 'tick again, from the first tick after now'));
  command.addCommand(simple('trigger', 'enqueue one job now (the next tick is unchanged)'));
  command.addCommand(simple('remove', 'delete the schedule (its jobs stay)'));
  return command;
}
