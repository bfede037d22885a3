import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../package-root.js';
import { Command } from 'commander';
import { cancelCommand } from './commands/cancel.js';
import { sendCommand } from './commands/send.js';
import { demoCommand } from './commands/demo.js';
import { enqueueCommand } from './commands/enqueue.js';
import { jobCommand } from './commands/job.js';
import { jobsCommand } from './commands/jobs.js';
import { migrateCommand } from './commands/migrate.js';
import { retryCommand } from './commands/retry.js';
import { promoteCommand } from './commands/promote.js';
import { scheduleCommand } from './commands/schedule.js';
import { schedulesCommand } from './commands/schedules.js';
import { serveCommand } from './commands/serve.js';
import { servicesCommand } from './commands/services.js';
import { workerCommand } from './commands/worker.js';
import { deleteCommand } from './commands/delete.js';
import { purgeCommand } from './commands/purge.js';
import { queueCommand } from './commands/queue.js';
import { queuesCommand } from './commands/queues.js';
import { keysCommand } from './commands/keys.js';
import { addHelpExamples } from './help-examples.js';
import { printableLines } from './output.js';

/** Makes a command and its subcommands throw instead of exiting, and print errors as `baton: …`. */
function configure(command: Command): Command {
  command.exitOverride().configureOutput(OUTPUT);
  for (const sub of command.commands) configure(sub);
  return command;
}

/**
 * Commander's own messages go to stderr, its errors in the CLI's one-line `baton: …`
 * form; they may quote an argument, so control characters are shown escaped.
 */
const OUTPUT = {
  writeErr: (text: string) => process.stderr.write(printableLines(text)),
  outputError: (text: string, write: (text: string) => void) => write(text.replace(/^error: /, 'baton: ')),
};

/** This package's version, from its package.json. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * The `baton` command line: one subcommand per file under commands/. Commander
 * is told to throw instead of exiting (main.ts maps errors to exit codes) and to
 * print its usage errors on stderr as one line. Each command's help ends with an
 * example (help-examples.ts).
 */
export function createProgram(): Command {
  const program = new Command('baton')
    .description('Baton: durable background jobs. Every command takes --database (default $BATON_DATABASE_URL, else sqlite:./baton.db).')
    .version(packageVersion(), '-V, --version', 'print the version of baton-jobs')
    .option('--verbose', 'on an error, print its stack trace too (as BATON_LOG_LEVEL=debug does)')
    .exitOverride()
    .configureOutput(OUTPUT)
    .showSuggestionAfterError(true);
  for (const command of [
    workerCommand(),
    serveCommand(),
    enqueueCommand(),
    cancelCommand(),
    sendCommand(),
    retryCommand(),
    promoteCommand(),
    jobsCommand(),
    jobCommand(),
    schedulesCommand(),
    scheduleCommand(),
    servicesCommand(),
    queuesCommand(),
    queueCommand(),
    keysCommand(),
    deleteCommand(),
    purgeCommand(),
    migrateCommand(),
    demoCommand(),
  ]) {
    program.addCommand(configure(command));
  }
  return addHelpExamples(program);
}
