import { CommanderError } from 'commander';
import { BatonError, ConfigError, ValidationError } from '../errors.js';
import { createProgram } from './program.js';
import { UsageError } from './options.js';
import { err } from './output.js';

/** Exit code of usage errors (bad flags, malformed JSON, invalid payload). */
export const EXIT_USAGE = 2;
/** Exit code of other failures (unknown job, already finished, database errors). */
export const EXIT_FAILURE = 1;

/**
 * Runs the `baton` command line with `argv` (as `process.argv`: node, script,
 * arguments). Sets `process.exitCode` and returns; it never calls `process.exit()`
 * while work is in flight. User errors print one line on stderr (no stack):
 * exit code 2 for usage errors, 1 for the rest.
 */
export async function main(argv: string[]): Promise<void> {
  const program = createProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = report(error);
  }
}

/** Prints `error` for a person and returns the exit code. */
function report(error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander printed the message already; help and --version exit 0.
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
  if (error instanceof UsageError || error instanceof ValidationError || error instanceof ConfigError) {
    err(`baton: ${error.message}`);
    return EXIT_USAGE;
  }
  if (error instanceof BatonError) {
    err(`baton: ${error.message}`);
    return EXIT_FAILURE;
  }
  err(`baton: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  return EXIT_FAILURE;
}
