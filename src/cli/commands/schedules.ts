import { Command } from 'commander';
import { withBaton, withDatabase } from '../options.js';
import { out, printJson, table, truncate } from '../output.js';

const when = (d: Date | null) => (d ? d.toISOString() : '-');

/**
 * `baton schedules`: every stored schedule with its cadence, next and last tick,
 * whether it is paused, and the worker that enqueued its last tick (schedules have
 * no holder: any worker with the scheduler on may enqueue a tick, exactly once).
 */
export function schedulesCommand(): Command {
  return withDatabase(new Command('schedules'))
    .description('list recurring schedules')
    .option('--json', 'print a JSON array of schedules')
    .action(async (flags: { database?: string; json?: boolean }) => {
      const schedules = await withBaton({ database: flags.database, readOnly: true }, (baton) => baton.schedules.list());
      if (flags.json) printJson(schedules);
      else if (schedules.length === 0) out('no schedules');
      else
        out(
          table(schedules, {
            name: (s) => s.name,
            cadence: (s) => s.cadence,
            task: (s) => s.task,
            overlap: (s) => s.overlap,
            'next run': (s) => (s.paused ? 'paused' : when(s.nextRunAt)),
            'last run': (s) => when(s.lastRunAt),
            paused: (s) => (s.paused ? 'yes' : 'no'),
            'last by': (s) => truncate(s.lastWorker ?? '-', 40),
          }),
        );
    });
}
