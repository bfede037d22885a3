import { spawnFixture, type Child } from '../lib/child.js';
import { wallNow } from '../lib/clock.js';
import { round, summarize } from '../lib/stats.js';
import type { Workload } from '../lib/workload.js';

const STEP_MS = 20;
const WORKER = { concurrency: 10, drainTimeout: 0, abortGrace: 100 };

/**
 * Workload 5: SIGTERM to resumed on another worker. Worker A runs a job that
 * checkpoints every 20 ms; worker B is started idle; A gets SIGTERM. Measured from
 * just before the signal to B's handler starting (B reports it). Each trial also
 * checks that B resumed from the last checkpoint A saved and that the attempt was
 * not counted. The next trial SIGTERMs B with a fresh idle C, and so on.
 */
export const handoff: Workload = {
  name: 'handoff',
  title: 'SIGTERM to resumed on another worker',
  async run(ctx) {
    const TRIALS = ctx.sizes.handoffTrials;
    const url = await ctx.database('handoff');
    const spawnWorker = (n: number) => spawnFixture('worker.ts', { database: url, worker: WORKER }, { name: `handoff worker ${n}` });
    let current: Child = spawnWorker(0);
    const client = spawnFixture('client.ts', { database: url }, { name: 'handoff enqueuer' });
    await Promise.all([current.waitForType('ready'), client.waitForType('ready')]);
    client.send({ op: 'enqueue', ref: 'job', task: 'checkpointer', payload: { stepMs: STEP_MS, steps: 1_000_000 } });
    const id = (await client.waitForType('enqueued')).id as number;
    let start = await current.waitForType('started', (r) => r.jobId === id);
    await client.close();

    const handoffs: number[] = [];
    const releases: number[] = [];
    let resumed = 0;
    let counted = 0;
    for (let trial = 1; trial <= TRIALS; trial++) {
      const next = spawnWorker(trial);
      await next.waitForType('ready');
      await current.waitForType('checkpointed', (r) => r.jobId === id);
      const signalled = wallNow();
      current.process.kill('SIGTERM');
      const [started, interrupted, stopped] = await Promise.all([
        next.waitForType('started', (r) => r.jobId === id),
        current.waitForType('interrupted', (r) => r.jobId === id),
        current.waitForType('stopped'),
      ]);
      await current.exited;
      handoffs.push((started.at as number) - signalled);
      releases.push((stopped.at as number) - signalled);
      if ((started.checkpoint as { step?: number } | null)?.step === interrupted.lastSaved) resumed++;
      if ((started.attempt as number) !== (start.attempt as number)) counted++;
      start = started;
      current = next;
    }
    await current.close();
    const s = summarize(handoffs);
    const r = summarize(releases);
    ctx.log(`hand-off: p50 ${round(s.p50)} ms, max ${round(s.max)} ms; resumed ${resumed}/${TRIALS}; attempts counted ${counted}/${TRIALS}`);
    return {
      figures: [
        {
          workload: '5. SIGTERM hand-off',
          name: `signal → handler started on the idle worker, ${TRIALS} trials`,
          value: s.max,
          unit: 'ms',
          text: `p50 ${round(s.p50)} / max ${round(s.max)} ms (released after p50 ${round(r.p50)} ms)`,
          target: ctx.driver.targets.handoff,
          detail: { handoff: s, signalToStopped: r },
        },
        {
          workload: '5. SIGTERM hand-off',
          name: 'resumed from the last saved checkpoint',
          value: resumed,
          unit: `/${TRIALS}`,
          text: `${resumed}/${TRIALS}`,
          target: { op: '>=', value: TRIALS, text: `${TRIALS}/${TRIALS} (SPEC)` },
        },
        {
          workload: '5. SIGTERM hand-off',
          name: 'attempt counted by the hand-off',
          value: counted,
          unit: `/${TRIALS}`,
          text: `${counted}/${TRIALS}`,
          target: { op: '<', value: 1, text: `0/${TRIALS} (SPEC)` },
        },
      ],
      settings: [
        `hand-off: drainTimeout ${WORKER.drainTimeout} ms, abortGrace ${WORKER.abortGrace} ms, checkpoint every ${STEP_MS} ms, default watchInterval and pollInterval; "released" = signal → the old worker's stop() resolved`,
      ],
    };
  },
};
