/**
 * The options each peer runs with, in one place: the fixtures build their
 * workers from these, and the runner prints them under the table. Each peer gets
 * its documented throughput settings (batch fetch, batched completions, polling
 * interval); `short-lease` is the W6 variant with the shortest lease / stall /
 * expiry setting it documents.
 */

/** The job length of W5/W6 (ms) and its steps. */
export const LONG_JOB = { stepMs: 200, steps: 100 } as const;
/** The lease W6's short-lease variant uses where a system has a renewable lease (ms). */
export const SHORT_LEASE_MS = 1_000;

export function graphileOptions(concurrency: number) {
  const localQueueSize = Math.max(concurrency * 2, 20);
  return {
    run: {
      concurrency,
      pollInterval: 2_000,
      preset: {
        worker: {
          localQueue: { size: localQueueSize },
          completeJobBatchDelay: 0,
          failJobBatchDelay: 0,
        },
      },
    },
    text: `concurrency ${concurrency}, localQueue.size ${localQueueSize} (batch fetch), completeJobBatchDelay 0 / failJobBatchDelay 0 (batched completions), pollInterval 2000 ms (default; new jobs arrive by LISTEN/NOTIFY), gracefulShutdownAbortTimeout 5000 ms (default); its lock timeout is a fixed 4 h (no setting)`,
  };
}

export const PG_BOSS_POLLING_SECONDS = 0.5; // the minimum pg-boss accepts

export function pgBossWorkerOptions(concurrency: number) {
  return {
    work: { batchSize: concurrency, pollingIntervalSeconds: PG_BOSS_POLLING_SECONDS, includeMetadata: true as const },
    text: `one work() per queue with batchSize ${concurrency} (pg-boss 10 has no per-job concurrency: a batch of up to ${concurrency} jobs is fetched, run with Promise.all and completed in one call; when a batch comes back full the handler calls the documented notifyWorker(id) so the next fetch skips the polling delay), pollingIntervalSeconds ${PG_BOSS_POLLING_SECONDS} (its minimum; pg-boss 10 polls, no LISTEN/NOTIFY); SIGTERM → stop({ graceful: true }) (default timeout 30 s)`,
  };
}

/** pg-boss constructor options per variant (expiry is set per job at send time, see `pgBossJobOptions`). */
export function pgBossBossOptions(variant: 'default' | 'short-lease' = 'default') {
  return variant === 'short-lease' ? { maintenanceIntervalSeconds: 1 } : {};
}

/** W6 short-lease for pg-boss: expiry must outlast the 20 s job (no heartbeat extends it), so 25 s; maintenance every 1 s finds it. */
export const PG_BOSS_SHORT_EXPIRE_SECONDS = 25;

export function bullmqWorkerOptions(concurrency: number, variant: 'default' | 'short-lease' = 'default') {
  const lease = variant === 'short-lease' ? { lockDuration: SHORT_LEASE_MS, stalledInterval: SHORT_LEASE_MS } : {};
  return {
    worker: { concurrency, ...lease },
    text:
      variant === 'short-lease'
        ? `concurrency ${concurrency}, lockDuration ${SHORT_LEASE_MS} ms, stalledInterval ${SHORT_LEASE_MS} ms (lock renewed every lockDuration/2)`
        : `concurrency ${concurrency}, defaults otherwise (lockDuration 30 s, stalledInterval 30 s, maxStalledCount 1, drainDelay 5 s, blocking fetch); jobs keep their completed records (no removeOnComplete), like the other systems; SIGTERM → worker.close() (waits for active jobs)`,
  };
}

/**
 * Baton's worker options per workload kind (bench/fixtures/worker.ts takes them as `worker`):
 * its throughput option, `prefetch` = concurrency (as many jobs claimed ahead as run at once:
 * graphile-worker's localQueue holds twice its concurrency, or at least 20), except in the
 * hand-off rows, which run one long job with its documented settings.
 */
export function batonWorkerOptions(concurrency: number, variant: 'default' | 'short-lease' | 'handoff' = 'default') {
  if (variant === 'short-lease') return { concurrency, leaseTtl: SHORT_LEASE_MS };
  if (variant === 'handoff') return { concurrency, drainTimeout: 0 };
  return { concurrency, prefetch: concurrency };
}
