import { CommanderError } from 'commander';
import { BatonError, ConfigError, ValidationError } from '../errors.js';
import { createProgram } from './program.js';
import { CliError, UsageError, firstLine } from './options.js';
import { endOutputOnClosedPipe, err, printable } from './output.js';

/** Exit code of usage errors (bad flags, malformed JSON, invalid payload). */
export const EXIT_USAGE = 2;
/** Exit code of other failures (unknown job, already finished, database errors). */
export const EXIT_FAILURE = 1;

/**
 * Runs the `baton` command line with `argv` (as `process.argv`: node, script,
 * arguments). Sets `process.exitCode` and returns; it never calls `process.exit()`
 * while work is in flight. Errors print one line on stderr starting with "baton:",
 * no stack: exit code 2 for usage errors, 1 for the rest. With `--verbose` or
 * `BATON_LOG_LEVEL=debug|trace` the stack (and its causes') follows that line.
 * A reader of stdout or stderr that goes away early only ends that output (see
 * {@link endOutputOnClosedPipe}): no crash, the command's own exit code.
 */
export async function main(argv: string[]): Promise<void> {
  endOutputOnClosedPipe(process.stdout);
  endOutputOnClosedPipe(process.stderr);
  const program = createProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    const verbose = argv.includes('--verbose') || ['debug', 'trace'].includes(process.env.BATON_LOG_LEVEL ?? '');
    process.exitCode = report(error, verbose);
  }
}

/** Prints `error` for a person and returns the exit code. */
function report(error: unknown, verbose: boolean): number {
  if (error instanceof CommanderError) {
    // Commander printed the message already; help and --version exit 0.
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
  let code = EXIT_FAILURE;
  // Messages may quote a job's or the user's text: printable keeps them one line, with nothing a terminal obeys.
  if (error instanceof UsageError || error instanceof ValidationError || error instanceof ConfigError) {
    err(`baton: ${printable(error.message)}`);
    code = EXIT_USAGE;
  } else if (error instanceof BatonError || error instanceof CliError) {
    err(`baton: ${printable(error.message)}`);
  } else if (isSystemError(error)) {
    // ENOENT, EACCES, ENOSPC…: the message names the call and the path.
    err(`baton: ${printable(firstLine(error))}`);
  } else {
    err(`baton: unexpected error: ${printable(firstLine(error))}${verbose ? '' : ' (--verbose shows the stack trace)'}`);
  }
  if (verbose) for (let e: unknown = error; e instanceof Error; e = e.cause) err(e.stack ?? String(e));
  return code;
}

/** An error of a Node system call (it has an `E…` code and names the call). */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  const e = error as NodeJS.ErrnoException | null;
  return e instanceof Error && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) && typeof e.syscall === 'string';
}
