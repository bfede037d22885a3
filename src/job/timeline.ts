import type { JobTimelineRecord, StoredAttempt, StoredJobEvent } from '../store/types.js';
import { NEVER, type JobState } from './types.js';

/**
 * A job's whole story, oldest first, as the API, the CLI and the dashboard show it:
 * built from what the store keeps (the job's row and its stored timeline, migration 18),
 * so it survives restarts and reads the same from any process.
 *
 * ```
 * enqueued
 *   → started (attempt n on worker W) ─┬→ released (shutdown; not counted) ─┐
 *                                      ├→ snoozed (not counted)            ─┤
 *                                      ├→ waiting (suspended; not counted) ─┤
 *                                      ├→ rescued (lease expired)          ─┤→ started …
 *                                      ├→ retryScheduled (failed, counted) ─┘
 *                                      └→ completed | failed | cancelled  ─→ retried (by hand, fresh or not) → started …
 *   promoted (a future runAt moved to now) may come while it is queued.
 *   cancelRequested (by whom) may come at any point before the end.
 * ```
 * Every entry has `at`, the `attempt` it is about and its `worker` (null when it is
 * about no attempt), and a one-line `summary`.
 */
export type TimelineEntry = TimelineBase &
  (
    | { type: 'enqueued'; schedule: string | null; scheduledFor: Date | null }
    | { type: 'started' }
    /** Handed back at shutdown, attempt not counted; due at once, in its place in line: `runAt` is the job's own, kept. */
    | { type: 'released'; runAt: Date }
    /**
     * The run suspended on a durable wait (ctx.sleep, ctx.sleepUntil, ctx.receive) and
     * handed the job back, attempt not counted: due at `runAt` (the wait's end, or at once
     * when a message it waits for was already there), or when a message wakes it.
     */
    | { type: 'waiting'; runAt: Date; wait: 'sleep' | 'message' | 'children'; topic: string | null; children: number[] | null }
    /** A completing run never reached these stored completed steps (renamed or removed since they ran): their results are kept, unused. */
    | { type: 'stepsOrphaned'; steps: string[] }
    /** Handed back by its handler (ctx.snooze, SnoozeError, RateLimitedError) for `delayMs`, attempt not counted. */
    | { type: 'snoozed'; runAt: Date; delayMs: number; rateLimited: boolean }
    /** Its lease expired (the worker died or froze); the rescuer requeued, failed or cancelled it. The attempt counts. */
    | { type: 'rescued'; outcome: 'queued' | 'failed' | 'cancelled' }
    /** The attempt failed with `error` (its message); it runs again at `runAt`. */
    | { type: 'retryScheduled'; runAt: Date; error: string }
    /** A cancel asked by `by` ("http", "cli", "api", "schedule:<name>", "key:<strategy>"…; null when not recorded). */
    | { type: 'cancelRequested'; by: string | null; reason: string | null }
    | { type: 'completed' }
    | { type: 'failed'; error: string | null }
    | { type: 'cancelled'; reason: string | null }
    /** A queued job due later made due at once by hand (`promote`); `runAt` is when it was due. */
    | { type: 'promoted'; runAt: Date }
    /** Run again by hand after it finished: attempts start over; from its checkpoint, or from scratch when `fresh` (checkpoint and progress cleared). */
    | { type: 'retried'; fresh: boolean }
  );

/** The fields every {@link TimelineEntry} has. */
export interface TimelineBase {
  at: Date;
  /** The attempt it is about; null for events outside an attempt (enqueue, a queued job's cancel). */
  attempt: number | null;
  /** The worker (id) of that attempt; null when none. */
  worker: string | null;
  /** One line for people, e.g. "attempt 1 released on shutdown by w-1 (not counted)". */
  summary: string;
}

type Outcome = Extract<JobState, 'completed' | 'failed' | 'cancelled'>;
/** An entry before its summary is written (each member of the union without `summary`). */
type Unsummarized = TimelineEntry extends infer E ? (E extends unknown ? Omit<E, 'summary'> : never) : never;

const iso = (date: Date) => date.toISOString();
const on = (worker: string | null) => (worker === null ? '' : ` on ${worker}`);

/** The one-line summary of an entry (without its time). */
function summarize(e: Unsummarized): string {
  const n = `attempt ${e.attempt ?? '?'}`;
  switch (e.type) {
    case 'enqueued':
      return e.schedule === null ? 'enqueued' : `enqueued by schedule ${e.schedule}${e.scheduledFor ? ` for its tick at ${iso(e.scheduledFor)}` : ''}`;
    case 'started':
      return `${n} started${on(e.worker)}`;
    case 'released':
      return `${n} released${on(e.worker)} at shutdown (not counted); due at once in its place in line (runAt ${iso(e.runAt)})`;
    case 'waiting':
      return `${n} suspended${on(e.worker)}: ${e.wait === 'sleep'
        ? `sleeps until ${iso(e.runAt)}`
        : e.wait === 'children'
          ? `waits for child jobs ${(e.children ?? []).join(', ')}`
          : `waits for a message on "${e.topic}"${e.runAt.getTime() >= NEVER ? '' : ` until ${iso(e.runAt)}`}`} (not counted; slot freed)`;
    case 'stepsOrphaned':
      return `${n} completed without reaching stored step${e.steps.length === 1 ? '' : 's'} ${e.steps.map((s) => `"${s}"`).join(', ')} (renamed or removed since ${e.steps.length === 1 ? 'it' : 'they'} ran; kept, unused)`;
    case 'snoozed':
      return `${n} snoozed${on(e.worker)} for ${e.delayMs} ms${e.rateLimited ? ' (rate limited)' : ''} (not counted); due again ${iso(e.runAt)}`;
    case 'rescued':
      return `${n} lost: the lease${e.worker === null ? '' : ` of ${e.worker}`} expired; rescued, ${e.outcome === 'queued' ? 'queued again' : e.outcome}`;
    case 'retryScheduled':
      return `${n} failed${on(e.worker)}: ${e.error}; retry at ${iso(e.runAt)}`;
    case 'cancelRequested':
      return `cancel requested${e.by === null ? '' : ` by ${e.by}`}${e.reason === null ? '' : `: ${e.reason}`}`;
    case 'completed':
      return `completed (${n}${on(e.worker)})`;
    case 'failed':
      return `failed (${n}${on(e.worker)})${e.error === null ? '' : `: ${e.error}`}`;
    case 'cancelled':
      return `cancelled${e.attempt === null ? '' : ` (${n}${on(e.worker)})`}${e.reason === null ? '' : `: ${e.reason}`}`;
    case 'promoted':
      return `promoted: due at once (was due ${iso(e.runAt)})`;
    case 'retried':
      return e.fresh ? 'retried by hand from scratch (attempts start over; checkpoint and progress cleared)' : 'retried by hand (attempts start over; resumes from its checkpoint, if any)';
  }
}

/**
 * Builds a job's timeline from its stored record (`jobTimeline` of the store). Attempt
 * starts are told, not stored: an event that ended an attempt carries its start, worker
 * and lease token, and the current or last attempt is the row's own (started_at, lease
 * holder or last worker), so each start appears once, before what ended it. A job
 * stored before migration 18 has no stored events: its story is what its fields tell.
 * Pure; never throws on a well-formed record.
 */
export function jobTimeline(record: JobTimelineRecord): TimelineEntry[] {
  const { job } = record;
  const entries: TimelineEntry[] = [];
  const push = (e: Unsummarized) => entries.push({ ...e, summary: summarize(e) } as TimelineEntry);
  const started = new Set<number>();
  const start = (a: StoredAttempt) => {
    if (a.token === null || a.token === undefined || a.startedAt === null || a.startedAt === undefined || started.has(a.token)) return;
    started.add(a.token);
    push({ type: 'started', at: new Date(a.startedAt), attempt: a.attempt ?? null, worker: a.worker ?? null });
  };
  // A cancelled outcome names the attempt it ended only when the cancel reached a running
  // one, as that request recorded it (a release that ends it cancelled uncounts the attempt).
  let lastCancel: StoredAttempt | null = null;
  const outcome = (state: Outcome, at: number, ended: StoredAttempt, error: string | null, reason: string | null) => {
    const cancel = lastCancel;
    const attempt = state !== 'cancelled'
      ? { attempt: ended.attempt ?? null, worker: ended.worker ?? null }
      : cancel !== null && cancel.token !== null && cancel.token !== undefined && cancel.token === ended.token
        ? { attempt: cancel.attempt ?? null, worker: cancel.worker ?? null }
        : { attempt: null, worker: null };
    if (state === 'completed') push({ type: 'completed', at: new Date(at), ...attempt });
    else if (state === 'failed') push({ type: 'failed', at: new Date(at), ...attempt, error });
    else push({ type: 'cancelled', at: new Date(at), ...attempt, reason });
  };

  const append = (event: StoredJobEvent, base: Pick<TimelineBase, 'at' | 'attempt' | 'worker'>): void => {
    switch (event.type) {
      case 'released':
        return void push({ type: 'released', ...base, runAt: new Date(event.runAt) });
      case 'snoozed':
        return void push({ type: 'snoozed', ...base, runAt: new Date(event.runAt), delayMs: Math.max(0, event.runAt - event.at), rateLimited: event.rateLimited });
      case 'waiting':
        return void push({ type: 'waiting', ...base, runAt: new Date(event.runAt), wait: event.wait.kind, topic: event.wait.topic ?? null, children: event.wait.ids ?? null });
      case 'stepsOrphaned':
        return void push({ type: 'stepsOrphaned', ...base, steps: event.steps });
      case 'rescued':
        return void push({ type: 'rescued', ...base, outcome: event.outcome });
      case 'retryScheduled':
        return void push({ type: 'retryScheduled', ...base, runAt: new Date(event.runAt), error: event.error });
      case 'cancelRequested':
        lastCancel = event;
        return void push({ type: 'cancelRequested', ...base, by: event.by ?? null, reason: event.reason ?? null });
      case 'promoted':
        return void push({ type: 'promoted', ...base, runAt: new Date(event.runAt) });
      case 'retried':
        if (event.finishedAt !== null) outcome(event.state, event.finishedAt, event, event.error, event.reason);
        lastCancel = null;
        return void push({ type: 'retried', at: base.at, attempt: null, worker: null, fresh: event.fresh ?? false });
    }
  };

  push({ type: 'enqueued', at: job.createdAt, attempt: null, worker: null, schedule: job.scheduleName, scheduledFor: job.scheduledFor });
  for (const event of record.events) {
    start(event);
    const base = { at: new Date(event.at), attempt: event.attempt ?? null, worker: event.worker ?? null };
    append(event, base);
  }
  if (job.startedAt) start({ attempt: job.attempt, token: record.leaseToken, worker: job.leaseOwner ?? record.lastWorker, startedAt: job.startedAt.getTime() });
  if (job.finishedAt && (job.state === 'completed' || job.state === 'failed' || job.state === 'cancelled')) {
    const ended = { attempt: job.attempt, token: record.leaseToken, worker: record.lastWorker, startedAt: null };
    outcome(job.state, job.finishedAt.getTime(), ended, job.errors.at(-1)?.message ?? null, job.cancelReason);
  }
  return entries;
}
