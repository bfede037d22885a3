import { InvalidArgumentError, type Command } from 'commander';
import { createBaton, type Baton } from '../baton.js';
import type { AnyTask } from '../job/task.js';
import { createLogger } from '../observe/logger.js';

/**
 * Parsers and helpers shared by the commands. A parser throws commander's
 * InvalidArgumentError, which commander reports as one line naming the option
 * (exit code 2, see main.ts).
 */

/** A command-line mistake the user can fix (bad JSON, conflicting flags): one line on stderr, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Parser of an integer option in `min..max`. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^[-+]?\d+$/.test(value.trim())) throw new InvalidArgumentError(`"${value}" is not an integer.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${n} is out of range ${min}..${max}.`);
    return n;
  };
}

/** Milliseconds: an integer 0..2147483647 (the largest Node timer). */
export const milliseconds = integer(0, 2_147_483_647);

/** A job id: a positive integer. */
export const jobId = integer(1);

/** Parser of a JSON option value. */
export function json(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (error) {
    throw new InvalidArgumentError(`not valid JSON (${(error as Error).message}).`);
  }
}

/** Parser of an ISO 8601 date-time. */
export function isoDate(value: string): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(value)) {
    throw new InvalidArgumentError(`"${value}" is not an ISO 8601 date-time (e.g. 2030-01-31T12:00:00Z).`);
  }
  return date;
}

/** Collects a repeatable option into an array. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Adds `--database <url>` (every command has it). */
export function withDatabase(command: Command): Command {
  return command.option('--database <url>', 'database URL (default: $BATON_DATABASE_URL, else sqlite:./baton.db)');
}

/**
 * Opens a Baton for one command. Logs go to stderr at `BATON_LOG_LEVEL`, else
 * `defaultLevel` (client commands keep quiet unless something goes wrong).
 */
export function openBaton(options: { database?: string; tasks?: AnyTask[] }, defaultLevel = 'warn'): Promise<Baton> {
  return createBaton({
    ...(options.database ? { database: options.database } : {}),
    ...(options.tasks ? { tasks: options.tasks } : {}),
    logger: createLogger({ level: process.env.BATON_LOG_LEVEL || defaultLevel }),
  });
}

/** Runs `fn` with a Baton and closes it afterwards, whatever happens. */
export async function withBaton<T>(options: { database?: string; tasks?: AnyTask[] }, fn: (baton: Baton) => Promise<T>): Promise<T> {
  const baton = await openBaton(options);
  try {
    return await fn(baton);
  } finally {
    await baton.close();
  }
}
