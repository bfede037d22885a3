import type { Context } from 'hono';
import { Hono } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { Baton } from '../../baton.js';
import type { JobSnapshot } from '../../client/follow.js';
import { NotFoundError } from '../../errors.js';
import { jobJson } from '../serialize.js';
import { queueSummary } from './fleet.js';
import { jobId } from './jobs.js';

/** Options of {@link eventRoutes}, in ms. */
interface EventOptions {
  intervalMs: number;
  heartbeatMs: number;
}

/**
 * GET /api/events: Server-Sent Events.
 *
 * Without `job`: polls the store every `intervalMs` and sends an event `change` with
 * `{ counts, running: [{ id, task, progress, state }], at }` (`counts`: GET /api/queues'
 * queues without `latencyMs` and throughput) whenever counts or running
 * jobs (progress included) differ from the last one sent (the first poll always sends).
 *
 * With `?job=ID`: follows that job (`baton.followJob`: woken by this process's writes
 * and the store's change notifications, read at least every `intervalMs`). Unknown id:
 * 404 before the stream starts; an id that is not a positive integer: 400. Events:
 * - `job`: `{ job, timeline?, at }`. The first carries every field of the job as
 *   `GET /api/jobs/:id` answers it (with `view`) except `payload` (it never changes: read
 *   it there), and the whole `timeline`; each later one only the fields that changed
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
export function eventRoutes(baton: Baton, options: EventOptions): Hono {
  const app = new Hono();
  app.get('/events', (c) => {
    const job = c.req.query('job');
    return job === undefined ? countStream(c, baton, options) : jobStream(c, baton, jobId(job), options);
  });
  return app;
}

/** The queue counts and running jobs, sent when they changed. */
function countStream(c: Context, baton: Baton, options: EventOptions): Response {
  return streamSSE(c, async (stream) => {
    let last = '';
    let closed = false;
    stream.onAbort(() => void (closed = true));
    const silence = heartbeat(stream, options.heartbeatMs);
    try {
      while (!closed && !stream.aborted) {
        const [summary, running] = await Promise.all([queueSummary(baton), baton.listJobs({ state: 'running', limit: 200 })]);
        // Without the latency, which grows every poll while a job is due: it would make every poll a change.
        const counts = summary.map(({ latencyMs: _latency, ...queue }) => queue);
        const data = JSON.stringify({ counts, running: running.map((j) => ({ id: j.id, task: j.task, queue: j.queue, progress: j.progress, state: j.cancelRequestedAt ? 'cancelling' : j.state })) });
        if (data !== last) {
          last = data;
          await silence.write({ event: 'change', data: `${data.slice(0, -1)},"at":${JSON.stringify(new Date(baton.clock.now()))}}` });
        }
        await stream.sleep(options.intervalMs);
      }
    } finally {
      silence.stop();
    }
  }, async () => undefined);
}

/** One job's changes (see {@link eventRoutes}); the first read happens before the response, so an unknown id is a 404. */
async function jobStream(c: Context, baton: Baton, id: number, options: EventOptions): Promise<Response> {
  const following = new AbortController();
  const updates = baton.followJob(id, { signal: following.signal, intervalMs: options.intervalMs });
  const first = await updates.next(); // NotFoundError → 404, before any byte is sent
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => following.abort());
    const silence = heartbeat(stream, options.heartbeatMs);
    let sent: Record<string, string> = {};
    const send = async ({ job, timeline }: JobSnapshot) => {
      const now = baton.clock.now();
      const { payload: _payload, ...fields } = jobJson(job, now);
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
