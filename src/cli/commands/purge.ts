import { Command } from 'commander';
import { bulkFilter, hasBulkFilter, printBulk, withBulkOptions, withProgress, type BulkFlags } from '../bulk-options.js';
import { UsageError, withBaton, withDatabase } from '../options.js';
import { plural } from '../output.js';

/** `baton purge --queue q --finished-before 2030-01-01 [--dry-run]`: deletes finished jobs matching the filter, in batches. */
export function purgeCommand(): Command {
  return withBulkOptions(withDatabase(new Command('purge')), 'purge', ['completed', 'failed', 'cancelled'], false)
    .description('delete finished jobs (completed, failed, cancelled) matching filter flags, oldest first')
    .action(async (flags: BulkFlags & { database?: string }) => {
      if (!hasBulkFilter(flags)) throw new UsageError('purge: give filter flags (--state, --queue, --task, --finished-before), or --all to delete every finished job');
      const result = await withBaton({ database: flags.database }, (baton) => withProgress(flags, 'purge', (options) => baton.jobs.purge(bulkFilter(flags), options)));
      printBulk(flags, 'delete', result, () => `${plural(result.deleted, 'finished job')} deleted`);
    });
}
