import { Command } from 'commander';
import { listen, refuseOpenNetwork, tokensFromEnv } from '../../http/listen.js';
import { loadWorkerModule } from '../load-tasks.js';
import { integer, openBaton, withDatabase } from '../options.js';
import { err, out } from '../output.js';
import { exitWhenIdle, onShutdownSignals } from '../signals.js';

interface ServeFlags {
  port: number;
  host: string;
  database?: string;
  tasks?: string;
  readToken?: string;
  adminToken?: string;
}

/**
 * `baton serve`: the HTTP API, /metrics and the dashboard, standalone. With
 * --tasks it validates payloads and refuses unknown task names. A non-loopback
 * --host needs a token (BATON_ADMIN_TOKEN / BATON_API_TOKEN or the options).
 * Probes: `/healthz` (liveness) and `/readyz` (the database answers and its schema
 * is current; routes/probes.ts), open without a token.
 * SIGTERM/SIGINT close the listener and the database, exit 0.
 */
export function serveCommand(): Command {
  return withDatabase(new Command('serve'))
    .description('serve the HTTP API, /metrics and the dashboard until SIGTERM/SIGINT')
    .option('--port <n>', 'port (0: any free one)', integer(0, 65535), 8080)
    .option('--host <host>', 'address to listen on; other than loopback needs a token', '127.0.0.1')
    .option('--tasks <file>', 'module exporting the tasks: payloads are validated and unknown task names refused')
    .option('--read-token <token>', 'read-only bearer token (default: $BATON_API_TOKEN)')
    .option('--admin-token <token>', 'admin bearer token (default: $BATON_ADMIN_TOKEN)')
    .action(async (flags: ServeFlags) => {
      const tasks = flags.tasks ? (await loadWorkerModule(flags.tasks)).tasks : undefined;
      const tokens = tokensFromEnv({ readToken: flags.readToken, adminToken: flags.adminToken });
      refuseOpenNetwork(flags.host, tokens); // before the database is created or migrated
      const baton = await openBaton({ database: flags.database, ...(tasks ? { tasks } : {}) }, 'info');
      // Loaded here, not at the top: the CLI imports every command, and only this one serves.
      const { createHttpApp } = await import('../../http/app.js');
      const app = createHttpApp(baton, { ...tokens, ...(tasks ? { tasks } : {}) });
      let server;
      try {
        server = await listen(app.fetch, { host: flags.host, port: flags.port, tokens });
      } catch (error) {
        await baton.close();
        throw error;
      }
      out(`baton serving ${server.url} (dashboard /, API /api, metrics /metrics, probes /healthz /readyz)${tokens.adminToken || tokens.readToken ? '' : '; no token: open to this machine only'}`);
      await new Promise<void>((resolve) => {
        onShutdownSignals({
          first: (signal) => {
            err(`${signal}: stopping`);
            void server.close().then(async () => {
              app.metrics.close();
              await baton.close();
              resolve();
            });
          },
          again: () => undefined,
        });
      });
      process.exitCode = 0;
      exitWhenIdle();
    });
}
