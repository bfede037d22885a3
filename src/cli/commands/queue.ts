import { Command, InvalidArgumentError } from 'commander';
import { integer, UsageError, withBaton, withDatabase } from '../options.js';
import { MAX_QUEUE_CONCURRENCY, MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS } from '../../client/queues.js';
import { out, printable, printJson } from '../output.js';

/** Parser of a queue-name argument: refuses an empty one (exit code 2). */
export const queueName = (value: string) => {
  if (value.length === 0) throw new InvalidArgumentError('a queue name is required.');
  return value;
};

/**
 * `baton queue pause|resume NAME`, `baton queue limit NAME N|none`, `baton queue rate NAME
 * LIMIT PERIOD_MS|none [--per-key]`: stop or restart claims from a queue, or bound its
 * running jobs or its starts per period, fleet-wide.
 */
export function queueCommand(): Command {
  const command = new Command('queue').description('pause or resume a queue, or limit its running jobs or its starts per period, for every worker');
  command.addCommand(
    withDatabase(new Command('pause'))
      .description('stop every worker claiming from the queue (running jobs go on; stored, so it outlives restarts)')
      .argument('<name>', 'queue name', queueName)
      .option('--force', 'pause a queue Baton does not know yet (no job, no worker serving it)')
      .option('--json', 'print { queue, paused, changed } as JSON')
      .action(async (name: string, flags: { database?: string; force?: boolean; json?: boolean }) => {
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.pause(name, { force: flags.force ?? false }));
        if (flags.json) printJson(result);
        else out(result.changed ? `queue ${printable(name)} paused: no worker claims from it until it is resumed` : `queue ${printable(name)} was already paused`);
      }),
  );
  command.addCommand(
    withDatabase(new Command('resume'))
      .description('let workers claim from the queue again (they are woken at once)')
      .argument('<name>', 'queue name', queueName)
      .option('--json', 'print { queue, paused, changed } as JSON')
      .action(async (name: string, flags: { database?: string; json?: boolean }) => {
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.resume(name));
        if (flags.json) printJson(result);
        else out(result.changed ? `queue ${printable(name)} resumed` : `queue ${printable(name)} was not paused`);
      }),
  );
  command.addCommand(
    withDatabase(new Command('limit'))
      .description('set the most jobs of the queue running at once across every worker (stored; "none" removes the limit)')
      .argument('<name>', 'queue name', queueName)
      .argument('<concurrency>', 'an integer 1..1000000, or "none"', queueLimit)
      .option('--force', 'limit a queue Baton does not know yet (no job, no worker serving it)')
      .option('--json', 'print { queue, concurrency, changed } as JSON')
      .action(async (name: string, concurrency: number | null, flags: { database?: string; force?: boolean; json?: boolean }) => {
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.setConcurrency(name, concurrency, { force: flags.force ?? false }));
        if (flags.json) printJson(result);
        else if (!result.changed) out(`queue ${printable(name)} already ${concurrency === null ? 'has no limit' : `has limit ${concurrency}`}`);
        else out(concurrency === null ? `queue ${printable(name)}: no limit` : `queue ${printable(name)}: at most ${concurrency} running at once across the fleet`);
      }),
  );
  command.addCommand(
    withDatabase(new Command('rate'))
      .description('set the most jobs of the queue that may start per period across every worker (a sliding window; stored; "none" removes it)')
      .argument('<name>', 'queue name', queueName)
      .argument('<limit>', `starts per period, an integer 1..${MAX_RATE_LIMIT.toLocaleString('en')}, or "none"`, rateLimit)
      .argument('[periodMs]', `the period in ms, 1..${MAX_RATE_PERIOD_MS} (7 days)`, integer(1, MAX_RATE_PERIOD_MS))
      .option('--per-key', "each concurrency key's starts apart, rather than the queue's together")
      .option('--force', 'set it on a queue Baton does not know yet (no job, no worker serving it)')
      .option('--json', 'print { queue, perKey, rate, changed } as JSON')
      .action(async (name: string, limit: number | null, periodMs: number | undefined, flags: { database?: string; perKey?: boolean; force?: boolean; json?: boolean }) => {
        if ((limit === null) !== (periodMs === undefined)) throw new UsageError(limit === null ? '"none" takes no period' : 'give the period in ms after the limit, e.g. `baton queue rate payments 100 60000`');
        const rate = limit === null ? null : { limit, periodMs: periodMs! };
        const perKey = flags.perKey ?? false;
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.setRateLimit(name, rate, { perKey, force: flags.force ?? false }));
        const what = `queue ${printable(name)}${perKey ? ' (each key)' : ''}`;
        if (flags.json) printJson(result);
        else if (!result.changed) out(`${what} already ${rate === null ? 'has no rate limit' : `has rate ${rateText(rate)}`}`);
        else out(rate === null ? `${what}: no rate limit` : `${what}: at most ${rateText(rate)} across the fleet`);
      }),
  );
  return command;
}

/** A rate as people read it: `100 starts per 60000 ms`. */
export function rateText(rate: { limit: number; periodMs: number }): string {
  return `${rate.limit} start${rate.limit === 1 ? '' : 's'} per ${rate.periodMs} ms`;
}

/** `rate`'s second argument: an integer 1..10000, or "none". */
function rateLimit(value: string): number | null {
  return value === 'none' ? null : integer(1, MAX_RATE_LIMIT)(value);
}

/** `limit`'s second argument: an integer 1..1000000, or "none". */
function queueLimit(value: string): number | null {
  if (value === 'none') return null;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > MAX_QUEUE_CONCURRENCY) {
    throw new InvalidArgumentError(`expected an integer 1..${MAX_QUEUE_CONCURRENCY.toLocaleString('en')}, or "none" (no limit); got ${JSON.stringify(value)}.`);
  }
  return n;
}
