/**
 * `node --conditions=baton-source --import tsx bench/diagnose-objects.ts [jobs] [concurrency] [rounds]`
 * (or under plain node against dist/: `node bench/diagnose-objects.ts` after `npm run build`, through tsx)
 *
 * What the JavaScript around each job costs (docs/benchmarks.md, "Fewer objects per
 * job"; issue 33 item 4): an in-process worker on a fresh SQLite file drains `jobs`
 * (default 50,000) no-op jobs at `concurrency` (default 10), default options, a silent
 * logger, no store observer. Measured from just before `worker.start()` to the last
 * `job:completed`: jobs/s, bytes allocated on the JS heap per job (v8.GCProfiler: the
 * used heap before each GC minus after the one before, plus what is left at the end),
 * GC time and its share of the drain, and the number of GCs. `rounds` (default 1)
 * repeats the drain on new files in the same process, the first round warming it up.
 * Prints one JSON line per round. With `BATON_PROFILE=<dir>` the last round also writes
 * a CPU profile (`drain.cpuprofile`) and a sampling profile of every allocation, the
 * collected ones included (`drain.heapprofile`), to open in Chrome DevTools.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import v8 from 'node:v8';
import { pino } from 'pino';
import type * as Baton from 'baton-jobs';

// BATON_ENTRY: another build's entry (e.g. a dist made by `node scripts/build.mjs --outdir`), to compare two builds interleaved.
const { createBaton, defineTask } = (await import(process.env.BATON_ENTRY ?? 'baton-jobs')) as typeof Baton;

const JOBS = Number(process.argv[2] ?? 50_000);
const CONCURRENCY = Number(process.argv[3] ?? 10);
const ROUNDS = Number(process.argv[4] ?? 1);
const logger = pino({ level: 'silent' });
const noop = defineTask('noop', { handler: async () => null });

interface HeapPoint {
  usedHeapSize: number;
}
interface GcEntry {
  cost: number;
  beforeGC: { heapStatistics: HeapPoint };
  afterGC: { heapStatistics: HeapPoint };
}

async function round(index: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-objects-'));
  const url = `sqlite:${join(dir, 'baton.db')}`;
  const baton = await createBaton({ database: url, logger });
  try {
    for (let from = 0; from < JOBS; from += 1_000) {
      const items = [];
      for (let i = from; i < Math.min(JOBS, from + 1_000); i++) items.push({ task: 'noop', payload: { i } });
      await baton.enqueueMany(items);
    }
    const worker = baton.worker({ tasks: [noop], concurrency: CONCURRENCY });
    let completed = 0;
    const drained = new Promise<void>((resolve) => worker.on('job:completed', () => void (++completed === JOBS && resolve())));
    const profileDir = index === ROUNDS ? process.env.BATON_PROFILE : undefined;
    const session = profileDir ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 200 });
      await session.post('Profiler.start');
      await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
    }
    const profiler = new v8.GCProfiler();
    const cpuBefore = process.cpuUsage();
    const usedBefore = process.memoryUsage().heapUsed;
    profiler.start();
    const started = performance.now();
    await worker.start();
    await drained;
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const usedAfter = process.memoryUsage().heapUsed;
    const { statistics } = profiler.stop() as unknown as { statistics: GcEntry[] };
    if (session && profileDir) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(join(profileDir, 'drain.cpuprofile'), JSON.stringify(profile));
      const heap = await session.post('HeapProfiler.stopSampling');
      writeFileSync(join(profileDir, 'drain.heapprofile'), JSON.stringify(heap.profile));
      session.disconnect();
    }
    await worker.stop();
    let allocated = 0;
    let gcUs = 0;
    let previous = usedBefore;
    for (const gc of statistics) {
      allocated += gc.beforeGC.heapStatistics.usedHeapSize - previous;
      previous = gc.afterGC.heapStatistics.usedHeapSize;
      gcUs += gc.cost;
    }
    allocated += usedAfter - previous;
    process.stdout.write(
      `${JSON.stringify({
        round: index,
        jobs: JOBS,
        concurrency: CONCURRENCY,
        jobsPerSecond: Math.round((JOBS * 1000) / ms),
        bytesPerJob: Math.round(allocated / JOBS),
        gcShare: Math.round((gcUs / 10 / ms) * 10) / 10,
        gcs: statistics.length,
        usPerJob: Math.round(((ms * 1000) / JOBS) * 10) / 10,
        cpuUsPerJob: Math.round(((cpu.user + cpu.system) / JOBS) * 10) / 10,
      })}\n`,
    );
  } finally {
    await baton.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let i = 1; i <= ROUNDS; i++) await round(i);
