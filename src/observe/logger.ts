import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import { ConfigError } from '../errors.js';

export type { Logger } from 'pino';

/** How logs are written: `json` (one pino JSON object per line) or `pretty` (one readable line per event, pino-pretty). */
export type LogFormat = 'json' | 'pretty';

const FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/**
 * The log format to use: `BATON_LOG_FORMAT` (`json` or `pretty`) when it is set, else
 * `pretty` when stderr is a terminal and `json` otherwise (piped, redirected, under a
 * process manager or a container runtime).
 * @param env - @defaultValue process.env
 * @param stderr - @defaultValue process.stderr
 * @throws ConfigError when BATON_LOG_FORMAT is set to anything else
 */
export function logFormat(env: NodeJS.ProcessEnv = process.env, stderr: { isTTY?: boolean } = process.stderr): LogFormat {
  const forced = env.BATON_LOG_FORMAT;
  if (forced !== undefined && forced !== '') {
    if (!(FORMATS as readonly string[]).includes(forced)) throw new ConfigError(`BATON_LOG_FORMAT must be json or pretty, not "${forced}"`);
    return forced as LogFormat;
  }
  return stderr.isTTY === true ? 'pretty' : 'json';
}

/**
 * The default logger, on stderr (stdout stays free for the CLI's `--json` output),
 * written synchronously so that no line is lost when the process exits.
 * @param options.level - trace|debug|info|warn|error|fatal|silent @defaultValue `BATON_LOG_LEVEL`, else 'info'
 * @param options.format - @defaultValue {@link logFormat}() (pretty in a terminal, JSON otherwise)
 * @throws ConfigError for a BATON_LOG_FORMAT other than json or pretty, or an unknown level
 */
export function createLogger(options: { level?: string; format?: LogFormat } = {}): Logger {
  const level = options.level ?? process.env.BATON_LOG_LEVEL ?? 'info';
  if (level !== 'silent' && !(level in pino.levels.values)) {
    throw new ConfigError(`log level (BATON_LOG_LEVEL) must be one of trace, debug, info, warn, error, fatal, silent, not "${level}"`);
  }
  const format = options.format ?? logFormat();
  return pino({ name: 'baton', level }, format === 'pretty' ? prettyStream() : pino.destination({ dest: 2, sync: true }));
}

/**
 * pino-pretty writing to stderr: one line per event (time, level, message, then the
 * fields), colours when the terminal supports them. Loaded here, on first use, so a
 * process that logs JSON never loads it.
 */
function prettyStream(): DestinationStream {
  const require = createRequire(import.meta.url);
  const { build } = require('pino-pretty') as typeof import('pino-pretty');
  return build({ destination: 2, sync: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name' });
}
