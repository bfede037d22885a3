/**
 * The HTTP API under attack from outside (issue 31 items 6, 7 and 9), on both drivers:
 * cross-site reads refused and `nosniff` everywhere, bounded answers for jobs of ~1 MiB
 * values, one shared `/api/events` poller with a cap on clients (503), duplicated query
 * parameters and long queue filters refused, an aborted upload logged as one info line,
 * a body that never arrives cut by the request timeout. The figures under attack (answer
 * time, RSS growth) are printed, not asserted; what is asserted is the bounded behaviour.
 */
import { connect, type Socket } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Baton } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { CONNECTIONS_CHECK_MS, listen, REQUEST_TIMEOUT_MS } from '../../src/http/listen.js';
import { openBaton, testDriver } from '../helpers/db.js';
import { sseReader } from '../helpers/sse.js';

const MiB = 1024 * 1024;

/** A JSON value whose text is about `bytes` long. */
const blob = (bytes: number, tag: string) => ({ tag, blob: 'x'.repeat(bytes - 30) });

/** Enqueues `count` jobs of ~1 MiB payloads on a queue no worker serves; claims `running` of them and stores ~1 MiB checkpoints and results on one. */
async function bigJobs(baton: Baton, count: number, running = 0): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push((await baton.enqueue('big', blob(MiB - 100, `p${i}`), { queue: 'parked' })).id);
  if (running > 0) {
    const now = baton.clock.now();
    const claimed = await baton.store.jobClaim({ workerId: 'w', tasks: ['big'], queues: ['parked'], limit: running, leaseMs: 600_000, now });
    const first = claimed[0]!;
    await baton.store.jobCheckpoint({ id: first.id, token: first.leaseToken, checkpoint: JSON.stringify(blob(MiB - 100, 'c')) });
  }
  return ids;
}

/** MiB of resident memory now. */
const rss = () => process.memoryUsage().rss / MiB;

/** The `GET /api/events` streams open, from `baton_http_event_clients` in /metrics. */
async function eventClients(app: ReturnType<typeof createHttpApp>): Promise<number> {
  const text = await (await app.request('/metrics')).text();
  return Number(/^baton_http_event_clients (\d+)$/m.exec(text)?.[1]);
}

/** Resolves once `check()` is true, checking every 20 ms (a state, not a duration, is awaited). */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('cross-site reads and nosniff (item 6)', () => {
  it('a page of another origin cannot make the server answer a read; same-origin, typed-in and non-browser requests still can; every answer says nosniff', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { eventsInterval: 50 });
    await baton.enqueue('t', { n: 1 }, { queue: 'parked' });
    const get = (path: string, headers: Record<string, string> = {}) => app.request(path, { headers });
    for (const path of ['/api/jobs?limit=500', '/api/jobs/1', '/api/jobs/1/payload', '/metrics', '/api/events', '/api/queues']) {
      for (const headers of [{ 'sec-fetch-site': 'cross-site' } as Record<string, string>, { 'sec-fetch-site': 'same-site' }, { origin: 'http://evil.example' }, { origin: 'http://localhost:9999' }]) {
        const answer = await get(path, headers);
        expect(answer.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(((await answer.json()) as { error: { code: string; message: string } }).error.message).toMatch(/cross-(site|origin) request refused/);
        expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      }
    }
    // The dashboard (same origin), a URL typed in (none) and curl (neither header) read as before.
    for (const headers of [{ 'sec-fetch-site': 'same-origin' } as Record<string, string>, { 'sec-fetch-site': 'none' }, {}, { origin: 'http://localhost', 'sec-fetch-site': 'same-origin' }]) {
      const answer = await get('/api/jobs', headers);
      expect(answer.status, JSON.stringify(headers)).toBe(200);
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    }
    // The probes and the dashboard's page hold no data: open to anyone.
    expect((await get('/healthz', { 'sec-fetch-site': 'cross-site' })).status).toBe(200);
    // nosniff on the metrics, errors, a download and the event stream too.
    expect((await get('/metrics')).headers.get('x-content-type-options')).toBe('nosniff');
    expect((await get('/api/nothing')).headers.get('x-content-type-options')).toBe('nosniff');
    expect((await get('/api/jobs/1/payload')).headers.get('x-content-type-options')).toBe('nosniff');
    const events = await app.request('/api/events');
    expect(events.headers.get('x-content-type-options')).toBe('nosniff');
    const reader = sseReader(events);
    await reader.until((e) => e.event === 'change', 'the first change');
    await reader.cancel();
  });
});

describe('bounded answers for jobs of ~1 MiB values (item 6)', () => {
  it('a job with a 1 MiB payload, checkpoint and result answers in kilobytes; lists stay bounded; lists and jobs are capped by responseLimit', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    const ids = await bigJobs(baton, 20, 1);
    const running = ids[0]!;
    const now = baton.clock.now();
    // A finished job with a 1 MiB result as well.
    const [claimed] = await baton.store.jobClaim({ workerId: 'w', tasks: ['big'], queues: ['parked'], limit: 1, leaseMs: 60_000, now });
    await baton.store.jobCompleteMany({ items: [{ id: claimed!.id, token: claimed!.leaseToken, result: JSON.stringify(blob(MiB - 100, 'r')) }], now });

    const before = rss();
    const started = performance.now();
    // The attack: many parallel reads of every job and of the biggest list page.
    const answers = await Promise.all([
      ...Array.from({ length: 10 }, () => app.request('/api/jobs?limit=1000')),
      ...ids.flatMap((id) => [app.request(`/api/jobs/${id}`), app.request(`/api/jobs/${id}`)]),
    ]);
    const texts = await Promise.all(answers.map((a) => a.text()));
    const ms = performance.now() - started;
    console.log(`[${testDriver}] ${answers.length} parallel reads of ~1 MiB jobs: ${ms.toFixed(0)} ms, RSS +${(rss() - before).toFixed(0)} MiB, largest answer ${Math.max(...texts.map((t) => t.length))} bytes`);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // A list: ~1 kB per job; a job: its values as previews (each was 1 MiB whole, 3 MiB for the finished one).
    for (const text of texts.slice(0, 10)) expect(text.length).toBeLessThan(20 * 2048);
    for (const text of texts.slice(10)) expect(text.length).toBeLessThan(16 * 1024);
    const detail = (await (await app.request(`/api/jobs/${running}`)).json()) as Record<string, any>;
    expect(detail).toMatchObject({ payload: null, checkpoint: null, result: null, resultPreview: null });
    expect(detail.payloadPreview).toMatchObject({ truncated: true, bytes: expect.any(Number) });
    expect(detail.checkpointPreview.text).toMatch(/^\{"tag":"c"/);
    const finished = (await (await app.request(`/api/jobs/${claimed!.id}`)).json()) as Record<string, any>;
    expect(finished.resultPreview).toMatchObject({ truncated: true });
    // The whole values come from the downloads, one value at a time.
    expect((await (await app.request(`/api/jobs/${running}/checkpoint`)).json()) as unknown).toEqual(blob(MiB - 100, 'c'));

    // Past responseLimit, nothing is answered but a 413 naming the limit.
    const small = createHttpApp(baton, { responseLimit: 4096 });
    const refused = await small.request('/api/jobs?limit=50');
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'response_too_large', message: expect.stringMatching(/this page of 20 jobs would be \d+ bytes, over this server's response limit of 4096 bytes: ask a smaller limit/) });
    const tiny = await createHttpApp(baton, { responseLimit: 1024 }).request(`/api/jobs/${running}`);
    expect(tiny.status).toBe(413);
    expect(((await tiny.json()) as { error: { message: string } }).error.message).toMatch(new RegExp(`^job ${running} would be \\d+ bytes, over this server's response limit of 1024 bytes: its errors and timeline are too long to answer whole; its values download from /api/jobs/${running}/payload, /result and /checkpoint$`));
    // A download is one value, at most the payload limit: not held to responseLimit.
    expect((await small.request(`/api/jobs/${running}/payload`)).status).toBe(200);
    expect((await small.request('/api/jobs?limit=2')).status).toBe(200);
    expect(() => createHttpApp(baton, { responseLimit: 10 })).toThrow(/responseLimit must be an integer 1024\.\.2147483647; got 10/);
  });
});

describe('GET /api/events: one shared poller, a cap on clients (item 7)', () => {
  it('N clients cost one store read per interval, not N; the poller stops with the last client', async () => {
    const lists: number[] = [];
    const baton = await openBaton({}, (op) => {
      if (op === 'jobList') lists.push(performance.now());
    });
    const intervalMs = 100;
    const app = createHttpApp(baton, { eventsInterval: intervalMs });
    await baton.enqueue('t', { n: 1 }, { queue: 'parked' });
    const clients = 20;
    const streams = await Promise.all(Array.from({ length: clients }, () => app.request('/api/events')));
    expect(streams.every((s) => s.status === 200)).toBe(true);
    const readers = streams.map((s) => sseReader(s));
    const firsts = await Promise.all(readers.map((r) => r.until((e) => e.event === 'change', 'the first change')));
    for (const first of firsts) expect(first.data.counts).toEqual([expect.objectContaining({ queue: 'parked', counts: expect.objectContaining({ queued: 1 }) })]);

    // Ten more reads: with one poller per client they came 20 per interval (all ten within one
    // interval); shared, one per interval, so ten take at least nine intervals. A slow machine
    // only makes them slower: the bound holds under any load.
    const from = lists.length;
    await until(() => lists.length >= from + 10, 'ten more reads');
    const span = lists[from + 9]! - lists[from]!;
    console.log(`[${testDriver}] ${clients} event clients: 10 store reads (jobList) took ${span.toFixed(0)} ms at a ${intervalMs} ms interval`);
    expect(span).toBeGreaterThanOrEqual(9 * intervalMs * 0.9);
    expect(await eventClients(app)).toBe(clients);

    // A change reaches every client from the one read.
    await baton.enqueue('t', { n: 2 }, { queue: 'parked' });
    await Promise.all(readers.map((r) => r.until((e) => e.event === 'change' && e.data.counts[0].counts.queued === 2, 'the second job')));

    await Promise.all(readers.map((r) => r.cancel()));
    await until(async () => (await eventClients(app)) === 0, 'every stream to end');
    const after = lists.length;
    await new Promise((r) => setTimeout(r, 5 * intervalMs)); // what is asserted is that nothing happens
    expect(lists.length - after).toBeLessThanOrEqual(1); // a read in flight at the last close, at most
  });

  it('past eventsMaxClients a client is refused with 503 (code busy) before any stream; a closed stream frees its place; ?job=ID streams count too', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { eventsInterval: 50, eventsMaxClients: 3 });
    const job = await baton.enqueue('t', { n: 1 }, { queue: 'parked' });
    const open = async (path: string) => {
      const response = await app.request(path);
      return { response, close: () => response.body?.cancel() };
    };
    const streams = [await open('/api/events'), await open('/api/events'), await open(`/api/events?job=${job.id}`)];
    expect(streams.map((s) => s.response.status)).toEqual([200, 200, 200]);
    const fourth = await open('/api/events');
    expect(fourth.response.status).toBe(503);
    expect(fourth.response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await fourth.response.json()) as { error: { code: string; message: string } }).error).toEqual({
      code: 'busy',
      message: 'too many event streams: this server serves at most 3 GET /api/events clients at once (the eventsMaxClients option); close one or retry later',
    });
    expect((await open(`/api/events?job=${job.id}`)).response.status).toBe(503);
    // A bad or unknown id is still a 400 / 404 (not a 503), and takes no place.
    expect((await open('/api/events?job=abc')).response.status).toBe(400);
    streams[2]!.close();
    await until(async () => (await eventClients(app)) === 2, 'the followed job\'s stream to end');
    expect((await open('/api/events?job=999999')).response.status).toBe(404);
    const again = sseReader((await open(`/api/events?job=${job.id}`)).response);
    const first = await again.until((e) => e.event === 'job', 'the job');
    expect(first.data.job).toMatchObject({ id: job.id, state: 'queued', resultPreview: null });
    expect(first.data.job).not.toHaveProperty('payloadPreview');
    await again.cancel();
    for (const s of streams.slice(0, 2)) await s.close();
    expect(() => createHttpApp(baton, { eventsMaxClients: 0 })).toThrow(/eventsMaxClients must be an integer 1\.\.100000; got 0/);
  });

  it('under attack: 150 clients and 30 running jobs of ~1 MiB: 100 streams (the default cap), 50 refused, one read per interval; enqueue latency and RSS printed', async () => {
    let lists = 0;
    const baton = await openBaton({}, (op) => {
      if (op === 'jobList') lists++;
    });
    await bigJobs(baton, 30, 30);
    const intervalMs = 200;
    const app = createHttpApp(baton, { eventsInterval: intervalMs });
    const latency = async () => {
      const started = performance.now();
      await baton.enqueue('t', {}, { queue: 'probe' });
      return performance.now() - started;
    };
    const quiet = await latency();
    const before = rss();
    const answers = await Promise.all(Array.from({ length: 150 }, () => app.request('/api/events')));
    const admitted = answers.filter((a) => a.status === 200);
    expect(admitted).toHaveLength(100);
    expect(answers.filter((a) => a.status === 503)).toHaveLength(50);
    const readers = admitted.map((a) => sseReader(a));
    const firsts = await Promise.all(readers.map((r) => r.until((e) => e.event === 'change', 'the first change')));
    expect(firsts[0]!.data.running).toHaveLength(30);
    const startedAt = performance.now();
    const fromLists = lists;
    const loaded: number[] = [];
    for (let i = 0; i < 5; i++) loaded.push(await latency());
    await until(() => lists >= fromLists + 5, 'five more reads');
    const elapsed = performance.now() - startedAt;
    const reads = lists - fromLists;
    console.log(`[${testDriver}] 150 event clients (100 admitted), 30 running ~1 MiB jobs: enqueue ${quiet.toFixed(1)} ms quiet, ${Math.max(...loaded).toFixed(1)} ms worst under the streams; RSS +${(rss() - before).toFixed(0)} MiB; ${reads} store reads in ${elapsed.toFixed(0)} ms`);
    // One poller: at most one read per interval started (plus the one in flight), not 100.
    expect(reads).toBeLessThanOrEqual(Math.ceil(elapsed / intervalMs) + 2);
    await Promise.all(readers.map((r) => r.cancel()));
    await until(async () => (await eventClients(app)) === 0, 'every stream to end');
  });
});

describe('smaller findings (item 9, HTTP)', () => {
  it('a duplicated query parameter is refused with a 400 naming it, on every route', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    for (const path of ['/api/jobs?state=failed&state=queued', '/api/queues/keys?limit=5&limit=6', '/api/events?job=1&job=2', '/metrics?a=1&a=2']) {
      const answer = await app.request(path);
      expect(answer.status, path).toBe(400);
      const { error } = (await answer.json()) as { error: { code: string; message: string; issues: unknown[] } };
      const name = new URLSearchParams(path.split('?')[1]).keys().next().value!;
      expect(error).toMatchObject({ code: 'validation', issues: [{ path: [name], message: 'given more than once; give each query parameter once (none takes a list)' }] });
    }
    expect((await app.request('/api/jobs?state=failed&queue=a')).status).toBe(200);
  });

  it('the list route refuses a queue filter over 200 characters as the keys route does', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    const long = 'q'.repeat(201);
    for (const path of [`/api/jobs?queue=${long}`, `/api/queues/keys?queue=${long}`]) {
      const answer = await app.request(path);
      expect(answer.status, path).toBe(400);
      const { error } = (await answer.json()) as { error: { message: string; issues: Array<{ path: string[]; message: string }> } };
      expect(error.message).toMatch(/^invalid (job list query: queue|queue name): Too big: expected string to have <=200 characters$/);
    }
    expect((await app.request(`/api/jobs?queue=${'q'.repeat(200)}`)).status).toBe(200);
    await expect(baton.listJobs({ queue: long })).rejects.toThrow(/invalid list options: queue: Too big/);
  });

  it('an aborted upload logs one info line, no error and no stack', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'debug' }, { write: (text: string) => void lines.push(JSON.parse(text) as Record<string, unknown>) });
    const baton = await openBaton({ logger });
    const server = await listen(createHttpApp(baton).fetch, { host: '127.0.0.1', port: 0, tokens: {} });
    try {
      const socket = await rawSocket(server.url);
      socket.write('POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"task":"t","payload":');
      await until(() => socket.bytesWritten > 0, 'the partial body to leave');
      socket.destroy();
      await until(() => lines.some((l) => /HTTP request/.test(String(l.msg))), 'the log line');
      const http = lines.filter((l) => /HTTP request/.test(String(l.msg)));
      expect(http).toEqual([expect.objectContaining({ level: 30, msg: 'HTTP request aborted by the client', method: 'POST', path: '/api/jobs' })]);
      expect(JSON.stringify(http)).not.toMatch(/stack|"err"/);
      expect(lines.filter((l) => Number(l.level) >= 50)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('a body that never arrives is cut by the request timeout, in seconds rather than Node\'s five minutes', async () => {
    const baton = await openBaton();
    const server = await listen(createHttpApp(baton).fetch, { host: '127.0.0.1', port: 0, tokens: {} });
    try {
      const socket = await rawSocket(server.url);
      let answer = '';
      socket.on('data', (chunk: Buffer) => void (answer += chunk.toString()));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const started = performance.now();
      socket.write('POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"ta');
      // Generous for a loaded CI machine: the timeout, Node's check period, and 15 s of slack (Node's default was 300 s).
      const budget = REQUEST_TIMEOUT_MS + CONNECTIONS_CHECK_MS + 15_000;
      const outcome = await Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), budget))]);
      const ms = performance.now() - started;
      console.log(`[${testDriver}] a slow-loris body was cut after ${ms.toFixed(0)} ms: ${JSON.stringify(answer.split('\r\n')[0])}`);
      expect(outcome).toBe('closed');
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 1000);
      socket.destroy();
    } finally {
      await server.close();
    }
    await expect(listen(() => new Response(''), { host: '127.0.0.1', port: 0, tokens: {}, requestTimeoutMs: 10 })).rejects.toThrow(/requestTimeoutMs must be an integer 1000\.\.2147483647/);
  });
});

/** A connected TCP socket to the server at `url`. */
async function rawSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return socket;
}
