import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Baton } from '../../baton.js';
import { queueSummary } from './fleet.js';

/**
 * GET /api/events: Server-Sent Events. Polls the store every `intervalMs` and
 * sends an event `change` with `{ counts, running: [{ id, task, progress, state }], at }`
 * (`counts`: GET /api/queues' queues without `latencyMs` and throughput)
 * whenever counts or running jobs (progress included) differ from the last one
 * sent (the first poll always sends), and a `: heartbeat` comment every
 * `heartbeatMs` so proxies keep the connection open. A store error ends the stream
 * (EventSource reconnects by itself).
 */
export function eventRoutes(baton: Baton, options: { intervalMs: number; heartbeatMs: number }): Hono {
  const app = new Hono();
  app.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      let last = '';
      let lastWrite = Date.now();
      let closed = false;
      stream.onAbort(() => void (closed = true));
      while (!closed && !stream.aborted) {
        const [summary, running] = await Promise.all([queueSummary(baton), baton.listJobs({ state: 'running', limit: 200 })]);
        // Without the latency, which grows every poll while a job is due: it would make every poll a change.
        const counts = summary.map(({ latencyMs: _latency, ...queue }) => queue);
        const data = JSON.stringify({ counts, running: running.map((j) => ({ id: j.id, task: j.task, queue: j.queue, progress: j.progress, state: j.cancelRequestedAt ? 'cancelling' : j.state })) });
        if (data !== last) {
          last = data;
          await stream.writeSSE({ event: 'change', data: `${data.slice(0, -1)},"at":${JSON.stringify(new Date(baton.clock.now()))}}` });
          lastWrite = Date.now();
        } else if (Date.now() - lastWrite >= options.heartbeatMs) {
          await stream.write(': heartbeat\n\n');
          lastWrite = Date.now();
        }
        await stream.sleep(options.intervalMs);
      }
    }, async () => undefined),
  );
  return app;
}
