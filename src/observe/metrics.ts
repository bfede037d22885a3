import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Baton } from '../baton.js';
import { JOB_STATES } from '../job/types.js';
import type { Worker } from '../worker/worker.js';

/**
 * Prometheus metrics (prom-client, one Registry per call: two apps in a process
 * never share or clash). Counters and histograms are fed from events of THIS
 * process: its client's `job:enqueued` and the events of every worker its Baton
 * created (before or after this call). Gauges are read from the store at scrape
 * time, so they show the whole fleet.
 *
 * | name | type | labels | what |
 * |---|---|---|---|
 * | `baton_jobs_enqueued_total` | counter | queue, task | jobs created by this process's client (a `key` that found an existing job does not count) |
 * | `baton_jobs_completed_total` | counter | queue, task | jobs this process's workers completed |
 * | `baton_jobs_failed_total` | counter | queue, task, final | failed attempts; `final="true"` when the job is now `failed` for good, `"false"` when it will be retried |
 * | `baton_jobs_cancelled_total` | counter | queue, task | running jobs this process's workers recorded cancelled |
 * | `baton_jobs_released_total` | counter | queue, task | jobs released back to queued at shutdown |
 * | `baton_jobs_snoozed_total` | counter | queue, task, rate_limited | jobs snoozed (attempt not counted); `rate_limited="true"` for RateLimitedError |
 * | `baton_lease_losses_total` | counter | queue, task | leases this process's workers lost to another worker |
 * | `baton_jobs_pruned_total` | counter | queue, state | finished jobs deleted by the pruner when it ran in this process; `"*"` when a batch spans queues (a default rule) or states (keep-N) |
 * | `baton_jobs_table_vacuums_total` | counter | — | vacuums of the jobs table this process's workers ran (maintenance/vacuum.ts; PostgreSQL past 100k dead rows) |
 * | `baton_job_duration_seconds` | histogram | queue, task | handler start to completion of completed jobs (a job claimed ahead, `prefetch`, does not count its wait) |
 * | `baton_job_queue_wait_seconds` | histogram | queue, task | due time (runAt) to claim, per claim |
 * | `baton_cancel_latency_seconds` | histogram | queue, task | cancel request stored to `job:cancelled` (running jobs) |
 * | `baton_job_steps_total` | counter | task, outcome | steps of this process's runs (`ctx.step` and the durable waits' own): `run` (ran and stored), `replayed` (its stored result returned, not run), `failed` (its last try threw) |
 * | `baton_job_step_duration_seconds` | histogram | task | time a step's function took, all its tries, for steps that ran and were stored (`run`) |
 * | `baton_job_waits_total` | counter | task, kind | runs suspended on a durable wait (`job:waiting`): kind `sleep` or `message` |
 * | `baton_job_steps_orphaned_total` | counter | task | stored completed steps a completing run never reached (`job:steps-orphaned`), one per step |
 * | `baton_jobs_running` | gauge | queue | running jobs in the database (every worker), at scrape |
 * | `baton_queue_jobs` | gauge | queue, state | jobs per queue and stored state, at scrape |
 * | `baton_queue_concurrency_limit` | gauge | queue | the fleet-wide limit on running jobs of each queue that has one, at scrape |
 * | `baton_queue_rate_limit` | gauge | queue, scope | starts allowed per rate window (scope `queue` or `key`), at scrape |
 * | `baton_queue_rate_used` | gauge | queue, scope | starts in the window ending at scrape (`key`: the busiest key's) |
 * | `baton_concurrency_key_jobs` | gauge | queue, key, state | running and queued jobs of the 20 busiest concurrency keys, at scrape |
 * | `baton_queue_latency_seconds` | gauge | queue | age of each queue's oldest due queued job (now − its runAt), 0 when none is due, at scrape |
 * | `baton_queue_unserved_jobs` | gauge | queue, task | due queued jobs of a task that no live worker serving the queue registers (they wait for ever), at scrape; no series when every due job has a worker |
 * | `baton_store_lock_waits_total` | counter | op | SQLite: store operations of this process that waited over 1 s for the write lock another process held |
 * | `baton_store_lock_wait_seconds` | gauge | — | SQLite: how long the longest such wait still in progress has waited, 0 when none, at scrape |
 * | `baton_http_event_clients` | gauge | — | `GET /api/events` streams open on the HTTP app (registered by createHttpApp on this registry; at most its eventsMaxClients) |
 */
export interface Metrics {
  readonly registry: Registry;
  /** Prometheus text exposition format (reads the store for the gauges). */
  text(): Promise<string>;
  readonly contentType: string;
  /** Stops listening to events. */
  close(): void;
}

/** Concurrency keys `baton_concurrency_key_jobs` lists: a bound on its series, whatever the number of keys. */
const BUSIEST_KEYS = 20;

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/**
 * Creates the metrics of `baton`; see the table above for names. Public as
 * `import { createMetrics } from 'baton-jobs/metrics'` (an entry of its own, so
 * that importing `baton-jobs` does not load prom-client).
 */
export function createMetrics(baton: Baton): Metrics {
  const registry = new Registry();
  const counter = (name: string, help: string, labels = ['queue', 'task']) => new Counter({ name, help, labelNames: labels, registers: [registry] });
  const histogram = (name: string, help: string) => new Histogram({ name, help, labelNames: ['queue', 'task'], buckets: SECONDS, registers: [registry] });
  const enqueued = counter('baton_jobs_enqueued_total', 'Jobs enqueued by this process');
  const completed = counter('baton_jobs_completed_total', 'Jobs completed by workers of this process');
  const failed = counter('baton_jobs_failed_total', 'Failed attempts in workers of this process; final="true" when the job failed for good', ['queue', 'task', 'final']);
  const cancelled = counter('baton_jobs_cancelled_total', 'Running jobs cancelled in workers of this process');
  const released = counter('baton_jobs_released_total', 'Jobs released back to queued at shutdown by workers of this process');
  const snoozed = counter('baton_jobs_snoozed_total', 'Jobs snoozed (ctx.snooze, SnoozeError, RateLimitedError) by workers of this process; rate_limited="true" for RateLimitedError', ['queue', 'task', 'rate_limited']);
  const leaseLosses = counter('baton_lease_losses_total', 'Job leases lost by workers of this process');
  const pruned = counter('baton_jobs_pruned_total', 'Finished jobs deleted by the pruner in this process; "*" when a batch spans queues or states', ['queue', 'state']);
  const vacuums = counter('baton_jobs_table_vacuums_total', 'Vacuums of the jobs table run by workers of this process', []);
  const duration = histogram('baton_job_duration_seconds', 'Handler start to completion of completed jobs');
  const queueWait = histogram('baton_job_queue_wait_seconds', 'Due time (runAt) to claim');
  const cancelLatency = histogram('baton_cancel_latency_seconds', 'Cancel request stored to job cancelled');
  const steps = counter('baton_job_steps_total', 'Steps of runs in workers of this process: outcome run (ran and stored), replayed (stored result returned), failed', ['task', 'outcome']);
  const stepDuration = new Histogram({ name: 'baton_job_step_duration_seconds', help: "Time a step's function took (all tries), steps that ran and were stored", labelNames: ['task'], buckets: SECONDS, registers: [registry] });
  const waits = counter('baton_job_waits_total', 'Runs suspended on a durable wait in workers of this process, by kind (sleep, message)', ['task', 'kind']);
  const orphaned = counter('baton_job_steps_orphaned_total', 'Stored completed steps a completing run never reached, in workers of this process', ['task']);

  // Gauges read the store at scrape; within one `text()` the gauges share each read: one
  // query of the counts, one listing of the queues' settings, made by the first gauge that
  // needs it. (Keyed by the scrape, not by time: a snapshot kept until the next macrotask
  // was served to a later scrape when only microtasks ran in between, e.g. on SQLite.)
  let scrape: { counts?: ReturnType<Baton['queueCounts']>; queues?: ReturnType<Baton['queues']['list']> } | undefined;
  const counts = () => (scrape ? (scrape.counts ??= baton.queueCounts()) : baton.queueCounts());
  const queues = () => (scrape ? (scrape.queues ??= baton.queues.list()) : baton.queues.list());
  new Gauge({
    name: 'baton_jobs_running',
    help: 'Running jobs in the database, by queue',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const row of await counts()) if (row.state === 'running') this.set({ queue: row.queue }, row.count);
    },
  });
  new Gauge({
    name: 'baton_queue_jobs',
    help: 'Jobs in the database by queue and state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await counts();
      for (const queue of new Set(rows.map((r) => r.queue))) {
        for (const state of JOB_STATES) this.set({ queue, state }, rows.find((r) => r.queue === queue && r.state === state)?.count ?? 0);
      }
    },
  });

  new Gauge({
    name: 'baton_queue_concurrency_limit',
    help: 'Fleet-wide limit on running jobs, by queue (queues without one are not listed)',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const q of await queues()) if (q.concurrency !== null) this.set({ queue: q.name }, q.concurrency);
    },
  });

  for (const [name, help, field] of [
    ['baton_queue_rate_limit', 'Starts allowed per rate window, by queue and scope ("queue": the queue\'s starts together; "key": each concurrency key\'s)', 'limit'],
    ['baton_queue_rate_used', 'Starts in the rate window that ends at scrape, by queue and scope ("key": the busiest key\'s)', 'used'],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: ['queue', 'scope'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const q of await queues()) {
          if (q.rateLimit) this.set({ queue: q.name, scope: 'queue' }, q.rateLimit[field]);
          if (q.keyRateLimit) this.set({ queue: q.name, scope: 'key' }, q.keyRateLimit[field]);
        }
      },
    });
  }

  new Gauge({
    name: 'baton_queue_latency_seconds',
    help: 'Age of the oldest due queued job of each queue (now minus its runAt), 0 when none is due',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const q of await queues()) this.set({ queue: q.name }, q.latencyMs / 1000);
    },
  });

  new Gauge({
    name: 'baton_queue_unserved_jobs',
    help: 'Due queued jobs of a task that no live worker serving the queue registers, by queue and task',
    labelNames: ['queue', 'task'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const q of await queues()) for (const t of q.unservedTasks) this.set({ queue: q.name, task: t.task }, t.jobs);
    },
  });

  new Gauge({
    name: 'baton_concurrency_key_jobs',
    help: `Live jobs of the ${BUSIEST_KEYS} busiest concurrency keys (most running, then most queued), by queue, key and state`,
    labelNames: ['queue', 'key', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const k of await baton.queues.keys(undefined, { limit: BUSIEST_KEYS })) {
        this.set({ queue: k.queue, key: k.key, state: 'running' }, k.running);
        this.set({ queue: k.queue, key: k.key, state: 'queued' }, k.queued);
      }
    },
  });

  const labels = (job: { queue: string; task: string }) => ({ queue: job.queue, task: job.task });
  const offs: Array<() => void> = [];
  const watched = new WeakSet<Worker>();
  const watch = (worker: Worker) => {
    if (watched.has(worker)) return;
    watched.add(worker);
    offs.push(
      worker.on('job:claimed', ({ job }) => {
        if (job.startedAt) queueWait.observe(labels(job), Math.max(0, job.startedAt.getTime() - job.runAt.getTime()) / 1000);
      }),
      worker.on('job:completed', ({ job, durationMs }) => {
        completed.inc(labels(job));
        duration.observe(labels(job), durationMs / 1000);
      }),
      worker.on('job:failed', ({ job, retryAt }) => failed.inc({ ...labels(job), final: String(retryAt === null) })),
      worker.on('job:snoozed', ({ job, rateLimited }) => snoozed.inc({ ...labels(job), rate_limited: String(rateLimited) })),
      worker.on('job:cancelled', ({ job }) => {
        cancelled.inc(labels(job));
        // The request time is in the database (it may have come from any process).
        baton.getJob(job.id).then(
          (row) => {
            if (row.cancelRequestedAt && row.finishedAt) cancelLatency.observe(labels(job), Math.max(0, row.finishedAt.getTime() - row.cancelRequestedAt.getTime()) / 1000);
          },
          () => undefined,
        );
      }),
      worker.on('job:released', ({ job }) => released.inc(labels(job))),
      worker.on('job:step', ({ job, outcome, durationMs }) => {
        steps.inc({ task: job.task, outcome });
        if (outcome === 'run') stepDuration.observe({ task: job.task }, durationMs / 1000);
      }),
      worker.on('job:waiting', ({ job, wait }) => waits.inc({ task: job.task, kind: wait.kind })),
      worker.on('job:steps-orphaned', ({ job, steps: names }) => orphaned.inc({ task: job.task }, names.length)),
      worker.on('lease:lost', ({ job }) => leaseLosses.inc(labels(job))),
      worker.on('jobs:pruned', ({ queue, state, deleted }) => pruned.inc({ queue: queue ?? '*', state: state ?? '*' }, deleted)),
      worker.on('jobs:vacuumed', () => vacuums.inc()),
    );
  };
  // Long waits for SQLite's write lock in progress: per operation, when each began (performance.now() ms).
  const lockWaits = new Map<string, number[]>();
  const lockWaitsTotal = counter('baton_store_lock_waits_total', 'SQLite store operations of this process that waited over 1 s for the write lock another process held', ['op']);
  new Gauge({
    name: 'baton_store_lock_wait_seconds',
    help: 'SQLite: how long the longest wait for the write lock still in progress in this process has waited, 0 when none',
    registers: [registry],
    collect() {
      const oldest = Math.min(...[...lockWaits.values()].flat());
      this.set(Number.isFinite(oldest) ? (performance.now() - oldest) / 1000 : 0);
    },
  });
  offs.push(baton.on('store:lock-wait', ({ op, phase, waitedMs }) => {
    const began = lockWaits.get(op) ?? [];
    if (phase === 'long') {
      lockWaitsTotal.inc({ op });
      lockWaits.set(op, [...began, performance.now() - waitedMs]);
    } else if (began.length > 1) lockWaits.set(op, began.slice(1));
    else lockWaits.delete(op);
  }));
  offs.push(baton.on('job:enqueued', ({ job }) => enqueued.inc(labels(job))));
  offs.push(baton.on('worker:created', ({ worker }) => watch(worker)));
  for (const worker of baton.localWorkers()) watch(worker);

  return {
    registry,
    contentType: registry.contentType,
    async text() {
      const mine = {};
      scrape = mine;
      try {
        return await registry.metrics();
      } finally {
        if (scrape === mine) scrape = undefined;
      }
    },
    close: () => offs.splice(0).forEach((off) => off()),
  };
}
