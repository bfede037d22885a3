import { Command } from 'commander';
import { integer, withBaton, withDatabase } from '../options.js';
import { out, printJson, table } from '../output.js';
import { queueName } from './queue.js';

/**
 * `baton keys [QUEUE] [--limit N] [--json]`: the busiest concurrency keys with live
 * jobs (most running first, then most queued), of one queue or of every queue, with
 * running as `1/1` (running/limit), or `3/—` for a key without a limit (turns only).
 * The table shows every cell printable (a key cannot break the terminal).
 */
export function keysCommand(): Command {
  return withDatabase(new Command('keys'))
    .description('list the busiest concurrency keys with queued or running jobs (running/limit)')
    .argument('[queue]', 'only this queue (default: every queue)', queueName)
    .option('--limit <n>', 'at most this many keys, 1..1000 (default: 20)', integer(1, 1000))
    .option('--json', 'print a JSON array of { queue, key, queued, running, limit }')
    .action(async (queue: string | undefined, flags: { database?: string; limit?: number; json?: boolean }) => {
      const keys = await withBaton({ database: flags.database, readOnly: true }, (baton) =>
        baton.queues.keys(queue, flags.limit === undefined ? {} : { limit: flags.limit }),
      );
      if (flags.json) printJson(keys);
      else if (keys.length === 0) out('No concurrency keys with live jobs.');
      else
        out(
          table(keys, {
            queue: (k) => k.queue,
            key: (k) => k.key,
            running: (k) => `${k.running}/${k.limit ?? '—'}`,
            queued: (k) => String(k.queued),
          }),
        );
    });
}
