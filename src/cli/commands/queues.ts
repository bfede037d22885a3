import { Command } from 'commander';
import { withBaton, withDatabase } from '../options.js';
import { out, printable, printJson, table } from '../output.js';
import type { RateState } from '../../client/queues.js';

/** A rate's window now: `used/limit per periodMs`. */
const rateCell = (rate: RateState) => `${rate.used}/${rate.limit} per ${rate.periodMs}ms`;

/**
 * `baton queues`: every queue with its job counts per state, whether it is paused, its
 * concurrency limit (running as `3/5`) and its rate limits (starts in the window as
 * `4/10 per 1000ms`; per key, the busiest key's).
 */
export function queuesCommand(): Command {
  return withDatabase(new Command('queues'))
    .description('list queues: jobs per state, paused ones, and limits (running/limit)')
    .option('--json', 'print a JSON array of queues')
    .action(async (flags: { database?: string; json?: boolean }) => {
      const queues = await withBaton({ database: flags.database, readOnly: true }, (baton) => baton.queues.list());
      if (flags.json) printJson(queues);
      else if (queues.length === 0) out('no queues');
      else
        out(
          table(queues, {
            queue: (q) => printable(q.name),
            status: (q) => (q.paused ? `paused since ${q.pausedAt!.toISOString()}` : 'active'),
            queued: (q) => String(q.counts.queued),
            running: (q) => (q.concurrency === null ? String(q.counts.running) : `${q.counts.running}/${q.concurrency}`),
            // Starts in the window / the rate, then each key's: `4/10 per 1000ms, key 1/2 per 500ms`.
            rate: (q) => [q.rateLimit && rateCell(q.rateLimit), q.keyRateLimit && `key ${rateCell(q.keyRateLimit)}`].filter(Boolean).join(', ') || '-',
            completed: (q) => String(q.counts.completed),
            failed: (q) => String(q.counts.failed),
            cancelled: (q) => String(q.counts.cancelled),
          }),
        );
    });
}
