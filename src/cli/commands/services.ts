import { Command } from 'commander';
import { withBaton, withDatabase } from '../options.js';
import { out, printJson, table, truncate } from '../output.js';

const when = (d: Date | null) => (d ? d.toISOString() : '-');

/** `baton services`: every service with its last and next run, the worker holding it now, and its last error. */
export function servicesCommand(): Command {
  return withDatabase(new Command('services'))
    .description('list scheduled services')
    .option('--json', 'print a JSON array of services')
    .action(async (flags: { database?: string; json?: boolean }) => {
      const services = await withBaton({ database: flags.database, readOnly: true }, (baton) => baton.services.list());
      if (flags.json) printJson(services);
      else if (services.length === 0) out('no services');
      else
        out(
          table(services, {
            name: (s) => s.name,
            'last run': (s) => when(s.lastRunAt),
            'next run': (s) => (s.paused ? 'paused' : s.nextRunAt ? when(s.nextRunAt) : s.lastRunAt ? 'when triggered' : 'now'),
            holder: (s) => truncate(s.holder ?? '-', 40),
            'last error': (s) => (s.lastError ? truncate(`${s.lastError} (${s.failures}x)`, 60) : '-'),
            paused: (s) => (s.paused ? 'yes' : 'no'),
          }),
        );
    });
}
