import { Command } from 'commander';
import { withBaton, withDatabase } from '../options.js';
import { out, printable, printJson, table } from '../output.js';

/** `baton queues`: every queue with its job counts per state and whether it is paused. */
export function queuesCommand(): Command {
  return withDatabase(new Command('queues'))
    .description('list queues: jobs per state, and paused ones')
    .option('--json', 'print a JSON array of queues')
    .action(async (flags: { database?: string; json?: boolean }) => {
      const queues = await withBaton({ database: flags.database, readOnly: true }, (baton) => baton.queues.list());
      if (flags.json) printJson(queues);
      else if (queues.length === 0) out('no queues');
      else
        out(
          table(queues, {
            queue: (q) => printable(q.name),
            status: (q) => (q.paused ? `paused since ${q.pausedAt!.toISOString()}` : 'active'),
            queued: (q) => String(q.counts.queued),
            running: (q) => String(q.counts.running),
            completed: (q) => String(q.counts.completed),
            failed: (q) => String(q.counts.failed),
            cancelled: (q) => String(q.counts.cancelled),
          }),
        );
    });
}
