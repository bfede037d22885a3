import { Option, type Command } from 'commander';
import type { BulkFilter, BulkOptions, BulkResult } from '../client/bulk.js';
import type { JobState } from '../job/types.js';
import { byFlag, integer, isoDate, UsageError } from './options.js';
import { out, plural, printJson, progressDisplay } from './output.js';

/** The flags of a bulk command (`retry`, `cancel`, `purge` without an id): the filter's fields plus the options. */
export interface BulkFlags extends BulkFilter {
  dryRun?: boolean;
  batchSize?: number;
  limit?: number;
  json?: boolean;
}

/**
 * Adds the filter flags of a bulk command: `--state` (one of `states`), `--queue`,
 * `--task`, `--created-before` (unless `created` is false), `--finished-before`,
 * `--all`, plus `--dry-run`, `--batch-size`, `--limit` and `--json`.
 */
export function withBulkOptions(command: Command, verb: string, states: readonly JobState[], created = true): Command {
  command
    .addOption(new Option('--state <state>', `only jobs in this state (default: ${states.join(' and ')})`).choices(states))
    .option('--queue <name>', 'only jobs of this queue')
    .option('--task <name>', 'only jobs of this task');
  if (created) command.option('--created-before <time>', 'only jobs created before this ISO 8601 time', isoDate);
  return command
    .option('--finished-before <time>', 'only jobs that finished before this ISO 8601 time', isoDate)
    .option('--all', `${verb} every ${states.join(' or ')} job: needed when no filter is given`)
    .option('--dry-run', 'count the matching jobs and change nothing')
    .option('--batch-size <n>', 'jobs per transaction (1..10000)', integer(1, 10_000), 1000)
    .option('--limit <n>', `${verb} at most this many jobs, the lowest ids first (e.g. the count a dry run showed)`, integer(1))
    .option('--json', 'print the result as JSON');
}

/** True when any filter flag (or --all) was given. */
export function hasBulkFilter(flags: BulkFlags): boolean {
  return [flags.state, flags.queue, flags.task, flags.createdBefore, flags.finishedBefore, flags.all].some((v) => v !== undefined);
}

/** The library filter of the flags. */
export function bulkFilter(flags: BulkFlags): BulkFilter {
  const filter: BulkFilter = {};
  if (flags.state) filter.state = flags.state;
  if (flags.queue !== undefined) filter.queue = flags.queue;
  if (flags.task !== undefined) filter.task = flags.task;
  if (flags.createdBefore) filter.createdBefore = flags.createdBefore;
  if (flags.finishedBefore) filter.finishedBefore = flags.finishedBefore;
  if (flags.all) filter.all = true;
  return filter;
}

/** `ID` or filter flags, not both, not neither; `--dry-run` only with filters. @throws UsageError */
export function idOrFilter(command: string, id: number | undefined, flags: BulkFlags): void {
  if (id !== undefined && hasBulkFilter(flags)) throw new UsageError(`${command}: give a job id or filter flags (--state, --queue, …), not both`);
  if (id !== undefined && flags.dryRun) throw new UsageError(`${command}: --dry-run counts the jobs matching filter flags; with a job id nothing would be counted (\`baton job ${id}\` shows it)`);
  if (id === undefined && !hasBulkFilter(flags)) throw new UsageError(`${command}: give a job id, or filter flags (--state, --queue, --task, …), or --all`);
}

/**
 * Prints a bulk result: JSON with --json; otherwise one line, the dry run's count
 * ("would retry 3 jobs") or what was done (`done` says it).
 */
export function printBulk(flags: BulkFlags, verb: string, result: BulkResult, done: () => string): void {
  if (flags.json) printJson(result);
  else if (result.matched === 0) out('no job matches');
  else if (result.dryRun) out(`would ${verb} ${plural(result.matched, 'job')} (dry run: nothing changed)`);
  else out(done());
}

/**
 * Runs a bulk operation with the flags' options. On a terminal (not --json, not
 * --dry-run) and when it takes more than one batch, the matching jobs are counted
 * first and a progress bar follows the batches. The client's refusal of a field
 * names its flag (`--created-before: …`).
 * @throws UsageError for a field the client refused
 */
export async function withProgress<R extends BulkResult>(flags: BulkFlags, label: string, run: (options: BulkOptions) => Promise<R>): Promise<R> {
  try {
    return await runWithProgress(flags, label, run);
  } catch (error) {
    throw byFlag(error);
  }
}

async function runWithProgress<R extends BulkResult>(flags: BulkFlags, label: string, run: (options: BulkOptions) => Promise<R>): Promise<R> {
  const options: BulkOptions = {
    dryRun: flags.dryRun ?? false,
    ...(flags.batchSize === undefined ? {} : { batchSize: flags.batchSize }),
    ...(flags.limit === undefined ? {} : { limit: flags.limit }),
  };
  if (options.dryRun || flags.json || !process.stdout.isTTY) return run(options);
  const { matched } = await run({ ...options, dryRun: true });
  if (matched <= (options.batchSize ?? 1000)) return run(options);
  const display = await progressDisplay();
  const bar = display.bar(label, matched);
  try {
    return await run({ ...options, onProgress: (processed) => bar.update(processed, Math.max(processed, matched)) });
  } finally {
    display.stop();
  }
}
