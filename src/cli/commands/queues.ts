import { Command } from 'commander';
import { withBaton, withDatabase } from '../options.js';
import { err, out, printable, printJson, table } from '../output.js';
import type { QueueInfo, Rate, RateState } from '../../client/queues.js';
import type { QueueSetting } from '../../store/store.js';

/** A latency for people: `-` for none, `850ms`, `12s`, `4m`, `3h`, `2d`. */
export function latencyCell(ms: number): string {
  if (ms <= 0) return '-';
  if (ms < 1000) return `${ms}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  return s < 86_400 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 86_400)}d`;
}

/** The warning for a queue with due jobs no live worker serves, or null: names each task and its due jobs. */
export function unservedWarning(q: Pick<QueueInfo, 'name' | 'workers' | 'unservedTasks'>): string | null {
  if (q.unservedTasks.length === 0) return null;
  const tasks = q.unservedTasks.map((t) => `"${t.task}" (${t.jobs} due)`).join(', ');
  const who = q.workers === 0 ? 'no live worker serves this queue at all' : `no live worker of this queue serves task${q.unservedTasks.length === 1 ? '' : 's'} ${tasks}`;
  return `warning: queue "${q.name}": ${who}${q.workers === 0 ? `; waiting: ${tasks}` : ''}`;
}

/** A rate's window now: `used/limit per periodMs`. */
const rateCell = (rate: RateState) => `${rate.used}/${rate.limit} per ${rate.periodMs}ms`;

/**
 * For a queue declared in code, where the value in force comes from: ` (code)`, or
 * ` (override; code 5)` naming the declared value it replaces (`none`: it declares none).
 * Nothing for a queue not declared in code, or a setting set nowhere.
 */
export function sourceNote(q: QueueInfo, setting: QueueSetting): string {
  const source = q.sources[setting];
  if (q.declared === null || source === null) return '';
  if (source === 'code') return ' (code)';
  const declared: number | Rate | null = q.declared[setting];
  return ` (override; code ${declared === null ? 'none' : typeof declared === 'number' ? declared : `${declared.limit} per ${declared.periodMs}ms`})`;
}

/**
 * `baton queues`: every queue with its job counts per state, whether it is paused, its
 * concurrency limit (running as `3/5`), its rate limits (starts in the window as
 * `4/10 per 1000ms`; per key, the busiest key's), for a queue declared in code whether
 * each setting is the code's or an override (`3/2 (override; code 5)`), its latency (age
 * of its oldest due job) and the tasks with due jobs that no live worker serves (also one
 * warning per such queue on stderr).
 */
export function queuesCommand(): Command {
  return withDatabase(new Command('queues'))
    .description('list queues: jobs per state, paused ones, limits (running/limit), latency and tasks no live worker serves')
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
            latency: (q) => latencyCell(q.latencyMs),
            running: (q) => (q.concurrency === null ? String(q.counts.running) : `${q.counts.running}/${q.concurrency}`) + sourceNote(q, 'concurrency'),
            // Starts in the window / the rate, then each key's: `4/10 per 1000ms, key 1/2 per 500ms`.
            rate: (q) => [
              (q.rateLimit || q.sources.rateLimit) && `${q.rateLimit ? rateCell(q.rateLimit) : 'none'}${sourceNote(q, 'rateLimit')}`,
              (q.keyRateLimit || q.sources.keyRateLimit) && `key ${q.keyRateLimit ? rateCell(q.keyRateLimit) : 'none'}${sourceNote(q, 'keyRateLimit')}`,
            ].filter(Boolean).join(', ') || '-',
            completed: (q) => String(q.counts.completed),
            failed: (q) => String(q.counts.failed),
            cancelled: (q) => String(q.counts.cancelled),
            unserved: (q) => q.unservedTasks.map((t) => `${t.task}(${t.jobs})`).join(', ') || '-',
          }),
        );
      if (!flags.json) for (const q of queues) {
        const warning = unservedWarning(q);
        if (warning) err(printable(warning));
      }
    });
}
