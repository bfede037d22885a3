import { bulkSeed } from '../lib/bulk-seed.js';
import { spawnFixture, type Report } from '../lib/child.js';
import { pause, seededRandom } from '../lib/clock.js';
import { processMemory } from '../lib/rss.js';
import { round, summarize } from '../lib/stats.js';
import type { Workload } from '../lib/workload.js';
import { cancelToSignal } from './cancel.js';

type StoreOps = Record<string, { count: number; totalMs: number }>;
/** Heartbeat intervals the store calls are counted over. */
const INTERVALS = 4;

/** Store calls per operation between two `stats` reports: count and total ms. */
function opsBetween(before: Report, after: Report): StoreOps {
  const a = before.storeOps as StoreOps;
  const b = after.storeOps as StoreOps;
  return Object.fromEntries(Object.entries(b).map(([op, v]) => [op, { count: v.count - (a[op]?.count ?? 0), totalMs: round(v.totalMs - (a[op]?.totalMs ?? 0)) }]));
}

/**
 * Workload 8: one worker child at concurrency `manyRunning` (2,000) holding as many
 * long jobs (`wait-signal`, bulk-seeded). Over 4 heartbeat intervals it counts the
 * store statements the worker sends (its instrumented store's per-operation
 * counter: each call is one statement or one short transaction), then another
 * process cancels `cancelTrials` (20) of the running jobs (after `cancelWarmup`, 2), each a random 0–50 ms
 * after the previous one's signal, measured from just before `cancel()` to the
 * handler's abort listener (split into the `cancel()` call itself — the canceller's
 * transaction — and the rest: its commit pushed to the worker, the abort); then the
 * worker's RSS (current and peak, /proc).
 */
export const manyRunning: Workload = {
  name: 'many-running',
  title: 'one worker holding 2,000 long jobs: heartbeat statements, cancel latency, RSS',
  async run(ctx) {
    const { manyRunning: N, manyRunningHeartbeatMs: HEARTBEAT, cancelTrials: TRIALS, cancelWarmup: WARMUP } = ctx.sizes;
    const url = await ctx.database('many-running');
    await bulkSeed(url, { count: N + WARMUP + TRIALS, task: 'wait-signal', runAt: Date.now() - 1_000 });
    const worker = spawnFixture('worker.ts', { database: url, worker: { concurrency: N, heartbeatInterval: HEARTBEAT } }, { name: 'many-running worker' });
    await worker.waitForType('ready');
    const started = await worker.waitForCount('started', N, 120_000);
    const stats = async (ref: string) => {
      worker.send({ op: 'stats', ref });
      return worker.waitForType('stats', (r) => r.ref === ref);
    };
    const before = await stats('before');
    await pause(INTERVALS * HEARTBEAT);
    const after = await stats('after');
    const ops = opsBetween(before, after);
    const intervals = ((after.at as number) - (before.at as number)) / HEARTBEAT;
    const per = (op: string) => (ops[op]?.count ?? 0) / intervals;
    const statements = Object.values(ops).reduce((sum, v) => sum + v.count, 0);

    const client = spawnFixture('client.ts', { database: url }, { name: 'many-running canceller' });
    await client.waitForType('ready');
    const random = seededRandom(8);
    const samples: number[] = [];
    const calls: number[] = [];
    const pushes: number[] = [];
    for (let trial = 0; trial < WARMUP + TRIALS; trial++) {
      await pause(random() * 50);
      const { ms, callMs } = await cancelToSignal(client, worker, started[trial]!.jobId as number);
      if (trial >= WARMUP) samples.push(ms);
      if (trial >= WARMUP) calls.push(callMs);
      if (trial >= WARMUP) pushes.push(ms - callMs);
    }
    const memory = processMemory(worker.pid);
    const end = await stats('end');
    await client.close();
    await worker.close();
    const s = summarize(samples);
    const c = summarize(calls);
    const push = summarize(pushes);
    const opsText = Object.entries(ops)
      .filter(([, v]) => v.count > 0)
      .sort((x, y) => y[1].count - x[1].count)
      .map(([op, v]) => `${op} ×${v.count} (${round(v.totalMs, 0)} ms)`)
      .join(', ');
    ctx.log(`many running: ${N} jobs; per heartbeat interval leaseExtendMany ${round(per('leaseExtendMany'), 2)}, all statements ${round(statements / intervals, 1)}; cancel p50 ${round(s.p50)} / p99 ${round(s.p99)} ms; RSS ${round(memory?.currentMB ?? Number.NaN, 0)} MB`);
    return {
      figures: [
        {
          workload: '8. many running',
          name: `lease renewals per heartbeat interval, ${N.toLocaleString('en')} running jobs`,
          value: per('leaseExtendMany'),
          unit: 'statements',
          text: `${round(per('leaseExtendMany'), 2)} (all store calls: ${round(statements / intervals, 1)} per interval)`,
          target: { op: '<', value: 1.5, text: '1 statement (SPEC)' },
          detail: { intervals, heartbeatMs: HEARTBEAT, ops },
        },
        {
          workload: '8. many running',
          name: `cancel → handler signal from another process, ${N.toLocaleString('en')} running, ${TRIALS} trials`,
          value: s.p99,
          unit: 'ms',
          text: `p50 ${round(s.p50)} / p99 ${round(s.p99)} ms (of which the cancel() call p50 ${round(c.p50)} / p99 ${round(c.p99)}, its return → signal p50 ${round(push.p50)} / p99 ${round(push.p99)})`,
          target: { op: '<', value: 50, text: 'p99 < 50 ms' },
          detail: { ...s, cancelCall: c, returnToSignal: push },
        },
        {
          workload: '8. many running',
          name: `worker RSS holding ${N.toLocaleString('en')} running jobs`,
          value: memory?.currentMB ?? Number.NaN,
          unit: 'MB',
          text: memory ? `${round(memory.currentMB, 0)} MB (peak ${round(memory.peakMB, 0)})` : 'n/a (no /proc)',
          detail: { ...memory, running: end.running },
        },
      ],
      settings: [
        `many running: worker under tsx, concurrency ${N}, heartbeatInterval ${HEARTBEAT} ms, other options default (cancelPollInterval 200 ms); store calls counted over ${INTERVALS} heartbeat intervals by the worker's instrumented store: ${opsText}`,
      ],
    };
  },
};
