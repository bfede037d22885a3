import { floorText, measureFloors } from '../floor/variants.js';
import type { Workload } from '../lib/workload.js';

/**
 * The storage floor of the run's driver (bench/floor): the lean claim/complete cycle
 * with no job system around it, in the runner process, on as many jobs as a drain
 * (`sizes.drain`), each variant once on fresh storage. Its figures are jobs/s (and
 * µs per job); the drain rows of the same run print their share of it. Runs whenever
 * `drain` does (`--only drain` brings it along).
 */
export const floor: Workload = {
  name: 'floor',
  title: 'storage floor: the lean claim/complete cycle, no job system (the drains print their share of it)',
  async run(ctx) {
    const measured = await measureFloors(ctx.driver.name, ctx.sizes.drain, ctx.log);
    return {
      figures: measured.map(({ variant, run }) => ({
        workload: '2. floor',
        name: variant.label,
        value: run.jobsPerSecond,
        unit: 'jobs/s',
        text: floorText(run.jobsPerSecond),
        detail: { floor: variant.key, connections: variant.connections, batch: variant.batch, jobs: run.jobs, ms: run.ms, cycles: run.cycles, usPerJob: run.usPerJob },
      })),
      settings: [
        `floor: ${ctx.sizes.drain.toLocaleString('en')} jobs per variant, in the runner process, no job system (bench/floor); a drain's share of floor is its jobs/s ÷ the floor's, same driver, same run: ${ctx.driver.name === 'postgres' ? 'the one-connection floor whose batch is the drain’s concurrency (else batch 10), and the best variant' : 'the lean table’s'}`,
      ],
    };
  },
};
