import { Command } from 'commander';
import { defaultDatabaseUrl, redact } from '../../store/open.js';
import { withBaton, withDatabase } from '../options.js';
import { out } from '../output.js';

/** `baton migrate`: applies pending schema migrations (every command that writes also does on open; reading ones never do). */
export function migrateCommand(): Command {
  return withDatabase(new Command('migrate'))
    .description('apply pending database migrations')
    .action(async (flags: { database?: string }) => {
      await withBaton({ database: flags.database }, async () => undefined);
      out(`database ${redact(flags.database ?? defaultDatabaseUrl())}: schema at the current version (pending migrations, if any, were applied)`);
    });
}
