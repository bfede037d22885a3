/**
 * The soak's traffic around the fleet (issue 34, item 2), run in the soak's own process on
 * a client of its own: a producer that enqueues continuously, a sender that answers every
 * `receiver` job with one message, a canceller that cancels random queued, running,
 * waiting and parent jobs, and a sampler of the running counts under limits. Each records
 * what Baton answered in the ledger, and each rides out a database restart: a call that
 * fails is retried (the producer's by its enqueue key, the sender's by its idempotency key)
 * or, for a sample, skipped.
 */
import { sleep, type Baton, type EnqueueItem } from 'baton-jobs';
import { FLEET, fleetDefinitions } from './fleet-tasks.js';
import type { LedgerWriter } from './ledger.js';
import { pause } from './nemesis-faults.js';

/** The reason every cancel of the canceller gives: `soak-cancel <n>`. A job cancelled with it is explained even when the cancel's answer was lost. */
export const CANCEL_REASON = /^soak-cancel \d+$/;

/** How much traffic: jobs enqueued per second by the producer (children and ticks come on top). */
export interface TrafficOptions {
  jobsPerSecond: number;
}

/** Draws in 20: 12 short, 1 long, 2 stepped, 2 receiver, 1 parent, 2 keyed. */
const MIX = ['short', 'short', 'short', 'short', 'short', 'short', 'short', 'short', 'short', 'short', 'short', 'short', 'long', 'stepped', 'stepped', 'receiver', 'receiver', 'parent', 'keyed', 'keyed'] as const;
type Kind = (typeof MIX)[number];

/** A job the producer made, for the canceller and the sender. */
interface Made {
  id: number;
  kind: Kind;
  at: number;
}

/** The soak's traffic; {@link run} until the signal aborts, then {@link drainSends}. */
export class Traffic {
  readonly #made: Made[] = [];
  readonly #sends = new Set<Promise<void>>();
  readonly #tasks: ReturnType<typeof fleetDefinitions>['tasks'];
  #cancels = 0;
  /** Jobs enqueued so far. */
  enqueued = 0;

  constructor(private readonly baton: Baton, private readonly ledger: LedgerWriter, private readonly options: TrafficOptions) {
    this.#tasks = fleetDefinitions(ledger, 'client').tasks;
  }

  /** Runs the producer, canceller and sampler until `signal` aborts (sends already begun go on: {@link drainSends}). */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([this.#produce(signal), this.#cancel(signal), this.#sample(signal)]);
  }

  /** Resolves when every message the sender began has been delivered, or its job has ended. */
  async drainSends(): Promise<void> {
    while (this.#sends.size > 0) await Promise.all(this.#sends);
  }

  /** Keeps sampling the limits until `signal` aborts (the drain after the traffic). */
  sampleUntil(signal: AbortSignal): Promise<void> {
    return this.#sample(signal);
  }

  #item(kind: Kind, n: number): EnqueueItem {
    const task = this.#tasks.find((t) => t.name === kind)!;
    const key = `p-${n}`;
    switch (kind) {
      case 'short':
        return { task, payload: { ms: 5 + (n % 6) * 5 }, options: { key } };
      case 'keyed':
        return { task, payload: { customer: `customer-${n % FLEET.customers}`, ms: 20 + (n % 6) * 20 }, options: { key } };
      default:
        return { task, payload: null, options: { key } };
    }
  }

  /** Enqueues `jobsPerSecond` in batches every 100 ms; a failed batch is sent again with the same keys. */
  async #produce(signal: AbortSignal): Promise<void> {
    const perBatch = Math.max(1, Math.round(this.options.jobsPerSecond / 10));
    let n = 0;
    while (!signal.aborted) {
      const kinds = Array.from({ length: perBatch }, () => MIX[Math.floor(Math.random() * MIX.length)]!);
      const items = kinds.map((kind, i) => this.#item(kind, n + i));
      n += perBatch;
      for (;;) {
        try {
          const jobs = await this.baton.enqueueMany(items);
          const at = Date.now();
          jobs.forEach((job, i) => {
            this.ledger.record({ kind: 'job-enqueued', jobId: job.id, task: job.task, queue: job.queue, key: job.concurrencyKey });
            this.#made.push({ id: job.id, kind: kinds[i]!, at });
            if (kinds[i] === 'receiver') this.#send(job.id);
          });
          this.enqueued += jobs.length;
          break;
        } catch {
          await pause(500, signal); // the database away: the same keys again (a key still held returns its job)
          if (signal.aborted) return;
        }
      }
      await pause(100, signal);
    }
  }

  /** Sends `receiver` job `jobId` its message 200–3,000 ms from now, retried (same idempotency key) until Baton takes it or the job has ended. */
  #send(jobId: number): void {
    const messageId = `m-${jobId}`;
    const send = (async () => {
      await sleep(200 + Math.random() * 2_800);
      this.ledger.record({ kind: 'message-sent', jobId, topic: FLEET.topic, messageId });
      for (;;) {
        try {
          await this.baton.send(jobId, FLEET.topic, { messageId }, { idempotencyKey: messageId });
          return;
        } catch {
          const job = await this.baton.getJob(jobId).catch(() => null);
          if (job && ['completed', 'failed', 'cancelled'].includes(job.state)) return;
          await sleep(500);
        }
      }
    })();
    this.#sends.add(send);
    void send.finally(() => this.#sends.delete(send));
  }

  /**
   * Every second, cancels one job made in the last few seconds, taking in turn a recent
   * `short` (queued or just running), a `long` (running), a `receiver` or `stepped` (waiting)
   * and a `parent` (with children). A cancel whose answer was lost is asked again; the job
   * then may already be cancelled (`unchanged`), which its reason explains ({@link CANCEL_REASON}).
   */
  async #cancel(signal: AbortSignal): Promise<void> {
    const turns: Kind[][] = [['short'], ['long'], ['receiver', 'stepped'], ['parent']];
    for (let turn = 0; !signal.aborted; turn++) {
      await pause(1_000, signal);
      const kinds = turns[turn % turns.length]!;
      const recent = this.#made.filter((m) => kinds.includes(m.kind) && m.at > Date.now() - 4_000);
      const target = recent[Math.floor(Math.random() * recent.length)];
      if (!target) continue;
      const reason = `soak-cancel ${++this.#cancels}`;
      for (let tries = 0; tries < 20 && !signal.aborted; tries++) {
        try {
          const answer = await this.baton.cancel(target.id, reason);
          this.ledger.record({ kind: 'cancel-requested', jobId: target.id, outcome: answer.outcome, stateSeen: answer.job.state, startedAt: answer.job.startedAt?.getTime() ?? null });
          break;
        } catch {
          await pause(500, signal);
        }
      }
    }
  }

  /** Every 500 ms, the running count of the limited queue and of each of its keys, against their limits (a sample the database could not answer is skipped). */
  async #sample(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await pause(500, signal);
      try {
        const queue = (await this.baton.queues.list()).find((q) => q.name === FLEET.limited.name);
        if (queue) this.ledger.record({ kind: 'limit-sample', scope: 'queue', name: queue.name, running: queue.counts.running, limit: FLEET.limited.concurrency });
        for (const key of await this.baton.queues.keys(FLEET.limited.name)) {
          this.ledger.record({ kind: 'limit-sample', scope: 'key', name: key.key, running: key.running, limit: key.limit ?? 1 });
        }
      } catch {
        // the database away: no sample this time
      }
    }
  }
}
