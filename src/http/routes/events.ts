import type { Context } from 'hono';
import { Hono } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { Baton } from '../../baton.js';
import type { JobSnapshot } from '../../client/follow.js';
import { NotFoundError } from '../../errors.js';
import type { EventFeed } from '../event-feed.js';
import { jobDetailJson } from '../serialize.js';
import { queueSummary } from './fleet.js';
import { jobId } from './jobs.js';

/** Options of {@link eventRoutes}, in ms. */
interface EventOptions {
  intervalMs: number;
  heartbeatMs: number;
}

/** The most running jobs a `change` event lists. */
const RUNNING_LISTED = 200;

/**
 * GET /api/events: Server-Sent Events. At most `eventsMaxClients` streams (both kinds)
 * are open at once; one more is refused with 503 (code busy) before any byte is sent.
 *
 * Without `job`: one read of the counts and running jobs per app every `intervalMs`,
 * shared by every such client (see EventFeed): each is sent an event `change` with
 * `{ counts, running: [{ id, task, queue, progress, state }], at }` (`counts`: GET /api/queues'
 * queues without `latencyMs` and throughput; `running`: the newest 200, read as list
 * summaries, never their values) whenever counts or running jobs (progress included)
 * differ from the last one sent (a new client is sent the current one at once).
 *
 * With `?job=ID`: follows that job (`baton.followJob`: woken by this process's writes
 * and the store's change notifications, read at least every `intervalMs`). Unknown id:
 * 404 before the stream starts; an id that is not a positive integer: 400. Events:
 * - `job`: `{ job, timeline?, at }`. The first carries every field of the job as
 *   `GET /api/jobs/:id` answers it (with `view`; a result or checkpoint over 64 KiB as
 *   its preview) except `payload` and `payloadPreview` (it never changes: read it there),
 *   and the whole `timeline`; each later one only the fields that changed
 *   since the previous event (`id` always), and `timeline`, whole, only when it changed.
 *   Sent only when something changed.
 * - `end`: `{ reason: "terminal", state, at }` after the event showing the job
 *   completed, failed or cancelled, or `{ reason: "deleted", at }` when it was deleted
 *   while followed; the server then closes the stream. A job retried later is followed
 *   by a new request. A client using EventSource should close() on `end`, or it
 *   reconnects.
 *
 * Both send a `: heartbeat` comment every `heartbeatMs` of silence so proxies keep the
 * connection open. A store error ends the stream (EventSource reconnects by itself).
 */
export function eventRoutes(baton: Baton, feed: EventFeed, options: EventOptions): Hono {
  const app = new Hono();
  app.get('/events', async (c) => {
    const job = c.req.query('job');
    const id = job === undefined ? undefined : jobId(job);
    const release = feed.admit();
    try {
      return id === undefined ? countStream(c, feed, baton, options, release) : await jobStream(c, baton, id, options, release);
    } catch (error) {
      release();
      throw error;
    }
  });
  return app;
}

/**
 * The text of a `change` event but its `at`: queue counts and running jobs (JSON). The
 * read of the app's EventFeed.
 */
export async function readChange(baton: Baton): Promise<string> {
  const [summary, running] = await Promise.all([queueSummary(baton), baton.listJobs({ state: 'running', limit: RUNNING_LISTED })]);
  // Without the latency, which grows every poll while a job is due: it would make every poll a change.
  const counts = summary.map(({ latencyMs: _latency, ...queue }) => queue);
  return JSON.stringify({ counts, running: running.map((j) => ({ id: j.id, task: j.task, queue: j.queue, progress: j.progress, state: j.cancelRequestedAt ? 'cancelling' : j.state })) });
}

/** The queue counts and running jobs from the shared feed, sent when they changed; `release` frees the stream's place. */
function countStream(c: Context, feed: EventFeed, baton: Baton, options: EventOptions, release: () => void): Response {
  return streamSSE(c, async (stream) => {
    let pending: string | undefined;
    let ended = false;
    let wake: (() => void) | undefined;
    const off = feed.subscribe({
      data: (text) => {
        pending = text; // a slow client skips to the latest: nothing piles up
        wake?.();
      },
      error: () => {
        ended = true;
        wake?.();
      },
    });
    stream.onAbort(() => wake?.());
    const silence = heartbeat(stream, options.heartbeatMs);
    try {
      while (!ended && !stream.aborted && !stream.closed) {
        if (pending === undefined) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        const data = pending;
        pending = undefined;
        await silence.write({ event: 'change', data: `${data.slice(0, -1)},"at":${JSON.stringify(new Date(baton.clock.now()))}}` });
      }
    } finally {
      off();
      silence.stop();
      release();
    }
  }, async () => undefined);
}

/**
 * One job's changes (see {@link eventRoutes}); the first read happens before the response, so
 * an unknown id is a 404. `release` frees the stream's place when the stream ends.
 */
async function jobStream(c: Context, baton: Baton, id: number, options: EventOptions, release: () => void): Promise<Response> {
  const following = new AbortController();
  const updates = baton.followJob(id, { signal: following.signal, intervalMs: options.intervalMs });
  const first = await updates.next(); // NotFoundError → 404, before any byte is sent
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => following.abort());
    const silence = heartbeat(stream, options.heartbeatMs);
    let sent: Record<string, string> = {};
    const send = async ({ job, timeline }: JobSnapshot) => {
      const now = baton.clock.now();
      const { payload: _payload, payloadPreview: _preview, ...fields } = jobDetailJson(job, [], now);
      const changed: Record<string, unknown> = { id: job.id };
      const next: Record<string, string> = {};
      for (const [key, value] of Object.entries({ ...fields, timeline })) {
        next[key] = JSON.stringify(value) ?? 'null';
        if (next[key] !== sent[key] && key !== 'timeline') changed[key] = value;
      }
      const data: Record<string, unknown> = { job: changed };
      if (next.timeline !== sent.timeline) data.timeline = timeline;
      sent = next;
      await silence.write({ event: 'job', data: JSON.stringify({ ...data, at: new Date(now) }) });
    };
    let last = first.done ? undefined : first.value;
    try {
      if (last) await send(last);
      for (let update = await updates.next(); !update.done; update = await updates.next()) {
        last = update.value;
        await send(last);
      }
      if (!following.signal.aborted && last) await silence.write({ event: 'end', data: JSON.stringify({ reason: 'terminal', state: last.job.state, at: new Date(baton.clock.now()) }) });
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      await silence.write({ event: 'end', data: JSON.stringify({ reason: 'deleted', at: new Date(baton.clock.now()) }) });
    } finally {
      silence.stop();
      following.abort();
      release();
      await updates.return();
    }
  }, async () => undefined);
}

/**
 * Writes a `: heartbeat` comment after every `heartbeatMs` without an event; `write`
 * sends an event and restarts the count.
 */
function heartbeat(stream: SSEStreamingApi, heartbeatMs: number): { write(message: { event: string; data: string }): Promise<void>; stop(): void } {
  let lastWrite = Date.now();
  const timer = setInterval(() => {
    if (Date.now() - lastWrite < heartbeatMs || stream.aborted || stream.closed) return;
    lastWrite = Date.now();
    void stream.write(': heartbeat\n\n').catch(() => undefined);
  }, Math.max(10, Math.min(heartbeatMs, 1000)));
  timer.unref();
  return {
    async write(message) {
      lastWrite = Date.now();
      await stream.writeSSE(message);
    },
    stop: () => clearInterval(timer),
  };
}
