import { open } from 'node:fs/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { createBaton, type Baton } from '../baton.js';
import type { AnyTask } from '../job/task.js';
import type { Queue } from '../flow/queue.js';
import { createLogger } from '../observe/logger.js';
import { MAX_RUN_AT, MIN_RUN_AT } from '../client/enqueue.js';
import { ValidationError, type ValidationSubject } from '../errors.js';
import { parseIsoDateTime } from '../validation.js';
import { DEFAULT_PAYLOAD_LIMIT } from '../job/payload.js';

/**
 * Parsers and helpers shared by the commands. A parser throws commander's
 * InvalidArgumentError, which commander reports as one line naming the option
 * (exit code 2, see main.ts).
 */

/** A command-line mistake the user can fix (bad JSON, conflicting flags): one line on stderr, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * A failure the user can act on that is not a usage mistake (a tasks file that
 * does not load): one line on stderr, exit code 1. The cause keeps the stack
 * (printed with --verbose or BATON_LOG_LEVEL=debug).
 */
export class CliError extends Error {
  override name = 'CliError';
}

/**
 * The client's refusal of an option or filter field, named by its flag: "invalid
 * enqueue options: --max-attempts: Too big: expected number to be <=1000" (a
 * field's camelCase name → `--kebab-case`). Only errors whose `subject` is one of
 * `subjects` (default: options and filter; the payload's paths are not flags);
 * anything else is returned unchanged.
 */
export function byFlag(error: unknown, subjects: ReadonlyArray<ValidationSubject | undefined> = ['options', 'filter']): unknown {
  if (!(error instanceof ValidationError) || !subjects.includes(error.subject)) return error;
  const issues = error.issues.map((i) => {
    const [first, ...rest] = i.path;
    const flag = typeof first === 'string' ? `--${first.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` : '';
    return [flag, ...rest].filter((p) => p !== '').join('.') + (flag || rest.length ? ': ' : '') + i.message;
  });
  return new UsageError(`${error.summary}: ${issues.join('; ')}`);
}

/** The first line of an error's message, for a one-line report. */
export function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = message.split('\n').map((l) => l.trim()).filter(Boolean);
  // esbuild (through tsx): "Transform failed with 1 error:\n<file>:<line>:<col>: ERROR: <text>"
  if (lines.length > 1 && /^(Transform|Build) failed with \d+ errors?:$/.test(lines[0]!)) return lines[1]!.replace(/: ERROR: /, ': ');
  const line = lines[0] ?? (error instanceof Error ? error.name : 'error');
  // Node's SyntaxError names the place only in its stack: "<file>:<line>\n<source>\n..."
  const where = error instanceof SyntaxError ? /^(?:file:\/\/)?(\/[^\n]*:\d+)\n/.exec(error.stack ?? '')?.[1] : undefined;
  return where ? `${line} (${where})` : line;
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

/**
 * Reads a JSON value given as an option: the JSON text itself, `@FILE` (read from
 * the file) or `-` (read from stdin until it ends). Done in the command's action,
 * not as a commander parser: commander turns a parser's `null` into '' and cannot
 * wait for a file. File and stdin bytes must be UTF-8 (a leading BOM is dropped),
 * as the HTTP API requires of a body: invalid bytes are refused, never replaced.
 * @param flag - the option's name, for messages ("--payload")
 * @throws UsageError for unreadable files, bytes that are not UTF-8 and text that is not JSON
 */
export async function readJsonOption(flag: string, value: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<unknown> {
  let text = value;
  let source = '';
  if (value === '-') {
    source = ' (from stdin)';
    if ((stdin as { isTTY?: boolean }).isTTY) process.stderr.write(`${flag} -: reading JSON from the terminal; end it with Ctrl-D\n`);
    text = decodeUtf8(flag, source, await readBounded(flag, source, stdin));
  } else if (value.startsWith('@')) {
    const file = value.slice(1);
    source = ` (from ${file})`;
    let stream: NodeJS.ReadableStream;
    try {
      stream = await openFile(file);
    } catch (error) {
      throw new UsageError(`${flag}: cannot read ${file}: ${firstLine(error)}`);
    }
    text = decodeUtf8(flag, source, await readBounded(flag, source, stream));
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    // Text from a file or stdin is not echoed (V8's message quotes its start): it may be anything, a secret included.
    const at = /at position (\d+)/.exec(String((error as Error).message))?.[1];
    throw new UsageError(`${flag}${source}: not valid JSON (${source ? (at ? `at character ${at}` : 'malformed or incomplete') : firstLine(error)})`);
  }
}

/**
 * The most bytes `@FILE` or `-` is read up to, 4 MiB: room for a payload at the default
 * payload limit (1 MiB, serialized compactly) written out pretty-printed; the payload
 * limit itself is checked on the parsed value. Reading stops past it, so `@/dev/zero`
 * or an endless pipe cannot fill memory.
 */
export const JSON_OPTION_READ_LIMIT = 4 * DEFAULT_PAYLOAD_LIMIT;

/** A readable stream of `file`, opened (so a missing file fails here). */
async function openFile(file: string): Promise<NodeJS.ReadableStream> {
  const handle = await open(file, 'r');
  return handle.createReadStream();
}

/** All of `stream`'s bytes, at most {@link JSON_OPTION_READ_LIMIT}. @throws UsageError past that (the stream is destroyed) */
async function readBounded(flag: string, source: string, stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    bytes += buffer.length;
    if (bytes > JSON_OPTION_READ_LIMIT) {
      (stream as { destroy?: () => void }).destroy?.();
      throw new UsageError(`${flag}${source}: more than ${JSON_OPTION_READ_LIMIT} bytes; a payload is at most ${DEFAULT_PAYLOAD_LIMIT} bytes as JSON (nothing enqueued)`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/** Bytes → text, refusing invalid UTF-8. @throws UsageError naming the flag and source */
function decodeUtf8(flag: string, source: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`${flag}${source}: not valid UTF-8 text (nothing enqueued)`);
  }
}

/**
 * Parser of a time option (`--run-at`): the ISO 8601 grammar the HTTP API's
 * `runAt` uses too ({@link parseIsoDateTime}): `2030-01-31T12:00:00Z`, an offset
 * such as `+02:00`, or a bare date (midnight UTC); an impossible date such as
 * 2024-02-30 is refused, not rolled over, and so is a time outside 1970..9999
 * (MIN_RUN_AT..MAX_RUN_AT, the times every driver stores); commander names the flag.
 * @throws InvalidArgumentError saying what is wrong with the text
 */
export function isoDate(value: string): Date {
  const parsed = parseIsoDateTime(value);
  if (typeof parsed === 'string') throw new InvalidArgumentError(`${parsed[0]!.toUpperCase()}${parsed.slice(1)}.`);
  if (parsed.getTime() < MIN_RUN_AT || parsed.getTime() > MAX_RUN_AT) {
    throw new InvalidArgumentError(`${value} is outside the times Baton stores, ${new Date(MIN_RUN_AT).toISOString()}..${new Date(MAX_RUN_AT).toISOString()}.`);
  }
  return parsed;
}

/** Collects a repeatable option into an array. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Collects a repeatable queue-name option (`--queue a --queue b` → `['a', 'b']`).
 * @throws InvalidArgumentError on an empty name or a name given twice
 */
export function collectQueue(value: string, previous: string[] | undefined): string[] {
  if (value === '') throw new InvalidArgumentError('A queue name must not be empty.');
  if (previous?.includes(value)) throw new InvalidArgumentError(`Queue "${value}" is given twice.`);
  return collect(value, previous);
}

/** Adds `--database <url>` (every command has it). */
export function withDatabase(command: Command): Command {
  return command.option('--database <url>', 'database URL (default: $BATON_DATABASE_URL, else sqlite:./baton.db)');
}

/**
 * Opens a Baton for one command. Logs go to stderr at `BATON_LOG_LEVEL`, else
 * `defaultLevel` (client commands keep quiet unless something goes wrong).
 * `readOnly`: commands that only read (jobs, job, queues, keys, schedules, services) need no
 * write access and never migrate (see BatonOptions.readOnly).
 */
export function openBaton(options: { database?: string; tasks?: AnyTask[]; queues?: Queue[]; readOnly?: boolean }, defaultLevel = 'warn'): Promise<Baton> {
  return createBaton({
    // An empty --database (an unset shell variable) is refused by name, not taken for the default.
    ...(options.database !== undefined ? { database: options.database } : {}),
    ...(options.tasks ? { tasks: options.tasks } : {}),
    ...(options.queues ? { queues: options.queues } : {}),
    ...(options.readOnly ? { readOnly: true } : {}),
    logger: createLogger({ level: process.env.BATON_LOG_LEVEL || defaultLevel }),
  });
}

/** Runs `fn` with a Baton and closes it afterwards, whatever happens. */
export async function withBaton<T>(options: { database?: string; tasks?: AnyTask[]; readOnly?: boolean }, fn: (baton: Baton) => Promise<T>): Promise<T> {
  const baton = await openBaton(options);
  try {
    return await fn(baton);
  } finally {
    await baton.close();
  }
}
