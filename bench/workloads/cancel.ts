import { spawnFixture, type Child } from '../lib/child.js';
import { pause, seededRandom } from '../lib/clock.js';
import { round, summarize } from '../lib/stats.js';
import type { Workload } from '../lib/workload.js';

/**
 * Workload 4: cross-process cancel latency. A worker process runs a job whose
 * handler waits on its signal; a client process calls `cancel(id)` and reports
 * the wall-clock time just before the call; the worker reports when the signal
 * fired. 20 trials one after the other (after 2 warm-up ones). Each cancel waits a
 * random 0–50 ms after the job started, so the trials do not all land at the same
 * phase of the worker's watch interval (the claim itself happened on a tick).
 */
export const cancel: Workload = {
  name: 'cancel',
  title: 'cancel latency from another process',
  async run(ctx) {
    const { cancelTrials: TRIALS, cancelWarmup: WARMUP } = ctx.sizes;
    const url = await ctx.database('cancel');
    const worker = spawnFixture('worker.ts', { database: url, worker: { concurrency: 10 } }, { name: 'cancel worker' });
    const client = spawnFixture('client.ts', { database: url }, { name: 'canceller' });
    await Promise.all([worker.waitForType('ready'), client.waitForType('ready')]);
    const samples: number[] = [];
    const random = seededRandom(4);
    for (let trial = 0; trial < WARMUP + TRIALS; trial++) {
      client.send({ op: 'enqueue', ref: `job-${trial}`, task: 'wait-signal' });
      const id = (await client.waitForType('enqueued', (r) => r.ref === `job-${trial}`)).id as number;
      await worker.waitForType('started', (r) => r.jobId === id);
      await pause(random() * 50);
      const { ms } = await cancelToSignal(client, worker, id);
      if (trial >= WARMUP) samples.push(ms);
    }
    await Promise.all([worker.close(), client.close()]);
    const s = summarize(samples);
    ctx.log(`cancel latency: p50 ${round(s.p50)} ms, p99 ${round(s.p99)} ms`);
    return {
      figures: [
        {
          workload: '4. cancel latency',
          name: `other process, ${TRIALS} trials`,
          value: s.p99,
          unit: 'ms',
          text: `p50 ${round(s.p50)} / p99 ${round(s.p99)} ms (max ${round(s.max)})`,
          target: ctx.driver.targets.cancel,
          detail: { ...s },
        },
      ],
      settings: [
        `cancel: default options (cancelPollInterval 200 ms); measured from just before \`cancel()\` to the abort listener; cancels sent a random 0–50 ms after the job started; ${ctx.driver.wakeUps}`,
      ],
    };
  },
};

/**
 * One cross-process cancel: `client` (a client.ts child) cancels running job `id`;
 * `worker` (the worker.ts child running it as `wait-signal`) reports when its signal
 * fired.
 * @returns `ms` from just before `cancel()` to the abort listener (one host, one clock),
 *   and `callMs` the part `cancel()` itself took (its transaction, until committed)
 * @throws when the signal fired with another reason than cancelled
 */
export async function cancelToSignal(client: Child, worker: Child, id: number): Promise<{ ms: number; callMs: number }> {
  client.send({ op: 'cancel', ref: `cancel-${id}`, id });
  const sent = await client.waitForType('cancel-sent', (r) => r.ref === `cancel-${id}`);
  const fired = await worker.waitForType('signal', (r) => r.jobId === id);
  if (fired.reason !== 'cancelled') throw new Error(`job ${id}: signal fired with ${String(fired.reason)}, not cancelled`);
  return { ms: (fired.at as number) - (sent.at as number), callMs: (sent.returnedAt as number) - (sent.at as number) };
}
