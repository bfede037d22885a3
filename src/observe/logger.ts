import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/**
 * The default logger: pino JSON lines on stderr, level from `BATON_LOG_LEVEL`
 * (trace|debug|info|warn|error|fatal|silent) @defaultValue 'info'.
 * Stderr keeps stdout free for `--json` output of the CLI.
 */
export function createLogger(options: { level?: string } = {}): Logger {
  return pino(
    { name: 'baton', level: options.level ?? process.env.BATON_LOG_LEVEL ?? 'info' },
    pino.destination({ dest: 2, sync: true }),
  );
}
