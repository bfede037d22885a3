/**
 * The log format (issue 13, item 2): pretty in a terminal, JSON otherwise,
 * BATON_LOG_FORMAT forces one; pino-pretty is loaded only by a process that
 * logs pretty.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError } from 'baton-jobs';
import { createLogger, logFormat } from '../../src/observe/logger.js';
import { spawnTs } from '../helpers/child.js';
import { until } from '../helpers/events.js';

const LOGGER_PROCESS = fileURLToPath(new URL('../fixtures/logger-process.ts', import.meta.url));

describe('log format', () => {
  it('pretty when stderr is a terminal, JSON otherwise; BATON_LOG_FORMAT forces either; an empty one is unset', () => {
    expect(logFormat({}, { isTTY: true })).toBe('pretty');
    expect(logFormat({}, { isTTY: false })).toBe('json');
    expect(logFormat({}, {})).toBe('json');
    expect(logFormat({ BATON_LOG_FORMAT: 'json' }, { isTTY: true })).toBe('json');
    expect(logFormat({ BATON_LOG_FORMAT: 'pretty' }, { isTTY: false })).toBe('pretty');
    expect(logFormat({ BATON_LOG_FORMAT: '' }, { isTTY: true })).toBe('pretty');
  });

  it('any other BATON_LOG_FORMAT is a ConfigError naming the value', () => {
    for (const value of ['JSON', 'text', ' pretty']) {
      expect(() => logFormat({ BATON_LOG_FORMAT: value }, { isTTY: true })).toThrow(ConfigError);
    }
    expect(() => logFormat({ BATON_LOG_FORMAT: 'text' })).toThrow('BATON_LOG_FORMAT must be json or pretty, not "text"');
  });

  it('an unknown log level is a ConfigError naming the levels; the known ones and silent are taken', () => {
    for (const level of ['loud', 'INFO', '']) expect(() => createLogger({ level, format: 'json' })).toThrow(ConfigError);
    expect(() => createLogger({ level: 'loud', format: 'json' })).toThrow('log level (BATON_LOG_LEVEL) must be one of trace, debug, info, warn, error, fatal, silent, not "loud"');
    for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']) expect(createLogger({ level, format: 'json' }).level).toBe(level);
  });

  it('a process logging JSON never loads pino-pretty; one logging pretty does, and writes one line per event', async () => {
    const run = async (format: string) => {
      const child = spawnTs(LOGGER_PROCESS, [], { BATON_LOG_FORMAT: format });
      const result = await child.waitFor((m) => m.type === 'result', 'the result');
      expect((await child.exited).code).toBe(0);
      await until(() => child.stderr.includes('hello'), 'the log line');
      return { prettyLoaded: result.prettyLoaded, stderr: child.stderr };
    };
    const [json, pretty] = await Promise.all([run('json'), run('pretty')]);
    expect(json.prettyLoaded).toBe(false);
    expect(JSON.parse(json.stderr)).toMatchObject({ level: 30, name: 'baton', msg: 'hello', jobId: 7 });
    expect(pretty.prettyLoaded).toBe(true);
    expect(pretty.stderr.replace(/\u001b\[[0-9;]*m/g, '')).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hello \{"jobId":7\}\n$/);
  });
});
