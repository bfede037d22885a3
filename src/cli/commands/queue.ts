import { Command, InvalidArgumentError } from 'commander';
import { integer, UsageError, withBaton, withDatabase } from '../options.js';
import { MAX_QUEUE_CONCURRENCY, MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS } from '../../client/queues.js';
import { out, printable, printJson } from '../output.js';
import type { QueueSetting } from '../../store/store.js';

/** Parser of a queue-name argument: refuses an empty one (exit code 2). */
export const queueName = (value: string) => {
  if (value.length === 0) throw new InvalidArgumentError('a queue name is required.');
  return value;
};

/**
 * `baton queue pause|resume NAME`, `baton queue limit NAME N|none|--clear`, `baton queue rate NAME
 * LIMIT PERIOD_MS|none|--clear [--per-key]`: stop or restart claims from a queue, or bound its
 * running jobs or its starts per period, fleet-wide (an override of what the code
 * declares with defineQueue; --clear drops it).
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
      .description('set the most jobs of the queue running at once across every worker (stored; "none" removes the limit); an override of the limit its code declares (defineQueue) until --clear')
      .argument('<name>', 'queue name', queueName)
      .argument('[concurrency]', 'an integer 1..1000000, or "none"', queueLimit)
      .option('--clear', 'drop the override: the limit the code declares (none if it declares none) is in force again')
      .option('--force', 'limit a queue Baton does not know yet (no job, no worker serving it, not declared in code)')
      .option('--json', 'print { queue, concurrency, changed } as JSON ({ queue, setting, changed } with --clear)')
      .action(async (name: string, concurrency: number | null | undefined, flags: { database?: string; clear?: boolean; force?: boolean; json?: boolean }) => {
        if (flags.clear) return clearOverride(name, 'concurrency', concurrency !== undefined, flags);
        if (concurrency === undefined) throw new UsageError('give the limit (an integer, or "none"), or --clear to drop the override');
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.setConcurrency(name, concurrency, { force: flags.force ?? false }));
        if (flags.json) printJson(result);
        else if (!result.changed) out(`queue ${printable(name)} already ${concurrency === null ? 'has no limit' : `has limit ${concurrency}`}`);
        else out(concurrency === null ? `queue ${printable(name)}: no limit` : `queue ${printable(name)}: at most ${concurrency} running at once across the fleet`);
      }),
  );
  command.addCommand(
    withDatabase(new Command('rate'))
      .description('set the most jobs of the queue that may start per period across every worker (a sliding window; stored; "none" removes it); an override of the rate its code declares (defineQueue) until --clear')
      .argument('<name>', 'queue name', queueName)
      .argument('[limit]', `starts per period, an integer 1..${MAX_RATE_LIMIT.toLocaleString('en')}, or "none"`, rateLimit)
      .argument('[periodMs]', `the period in ms, 1..${MAX_RATE_PERIOD_MS} (7 days)`, integer(1, MAX_RATE_PERIOD_MS))
      .option('--per-key', "each concurrency key's starts apart, rather than the queue's together")
      .option('--clear', 'drop the override: the rate the code declares (none if it declares none) is in force again')
      .option('--force', 'set it on a queue Baton does not know yet (no job, no worker serving it, not declared in code)')
      .option('--json', 'print { queue, perKey, rate, changed } as JSON ({ queue, setting, changed } with --clear)')
      .action(async (name: string, limit: number | null | undefined, periodMs: number | undefined, flags: { database?: string; perKey?: boolean; clear?: boolean; force?: boolean; json?: boolean }) => {
        const perKey = flags.perKey ?? false;
        if (flags.clear) return clearOverride(name, perKey ? 'keyRateLimit' : 'rateLimit', limit !== undefined, flags);
        if (limit === undefined) throw new UsageError('give the rate (LIMIT PERIOD_MS, or "none"), or --clear to drop the override');
        if ((limit === null) !== (periodMs === undefined)) throw new UsageError(limit === null ? '"none" takes no period' : 'give the period in ms after the limit, e.g. `baton queue rate payments 100 60000`');
        const rate = limit === null ? null : { limit, periodMs: periodMs! };
        const result = await withBaton({ database: flags.database }, (baton) => baton.queues.setRateLimit(name, rate, { perKey, force: flags.force ?? false }));
        const what = `queue ${printable(name)}${perKey ? ' (each key)' : ''}`;
        if (flags.json) printJson(result);
        else if (!result.changed) out(`${what} already ${rate === null ? 'has no rate limit' : `has rate ${rateText(rate)}`}`);
        else out(rate === null ? `${what}: no rate limit` : `${what}: at most ${rateText(rate)} across the fleet`);
      }),
  );
  return command;
}

/** `limit|rate NAME --clear`: drops the override of `setting`. @throws UsageError when a value was given too */
async function clearOverride(name: string, setting: QueueSetting, valueGiven: boolean, flags: { database?: string; json?: boolean; force?: boolean }): Promise<void> {
  if (valueGiven || flags.force) throw new UsageError('--clear takes no value and no --force: it drops the override of a known queue');
  const result = await withBaton({ database: flags.database }, (baton) => baton.queues.clearOverride(name, setting));
  const what = setting === 'concurrency' ? 'limit' : setting === 'rateLimit' ? 'rate limit' : 'per-key rate limit';
  if (flags.json) printJson(result);
  else out(result.changed ? `queue ${printable(name)}: ${what} override dropped; the value its code declares is in force` : `queue ${printable(name)}: ${what} was not overridden`);
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
