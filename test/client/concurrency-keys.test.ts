/**
 * `baton.queues.keys` (issue 12), and its HTTP and CLI adapters, on both drivers: the
 * busiest concurrency keys with live jobs, most running first, then most queued, with
 * the limit stored from the task (null for a key given without a task limit); bad
 * names and limits are refused naming the problem. That claims honour the limits is
 * the conformance suite's.
 */
import { describe, expect, it } from 'vitest';
import { defineTask, ValidationError, type Baton } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { runCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

/**
 * Fills `baton` with keyed work: in queue `mail`, acme has 1 running (limit 1) and 2
 * queued, globex 1 running; in queue `bulk`, a key with no limit (turns only) has 1
 * queued. Returns `release`, which lets the running job finish.
 */
async function keyedWork(baton: Baton) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const perCustomer = defineTask('perCustomer', { concurrency: { key: (p: { customer: string }) => p.customer, limit: 1 }, handler: () => gate });
  const worker = baton.worker({ tasks: [perCustomer], queues: ['mail'], concurrency: 4, pollInterval: 3_600_000 });
  await worker.start();
  const claimed = waitForEvent(worker, 'job:claimed');
  await baton.enqueue(perCustomer, { customer: 'acme' }, { queue: 'mail' });
  await claimed;
  await baton.enqueue(perCustomer, { customer: 'acme' }, { queue: 'mail' });
  await baton.enqueue(perCustomer, { customer: 'acme' }, { queue: 'mail' });
  // globex's key has room: wait for its claim (woken by the enqueue, or by this fetch).
  const globex = await baton.enqueue(perCustomer, { customer: 'globex' }, { queue: 'mail' });
  const globexClaimed = waitForEvent(worker, 'job:claimed', (e) => e.job.id === globex.id);
  await worker.loops.fetch();
  await globexClaimed;
  await baton.enqueue('untyped', {}, { queue: 'bulk', concurrencyKey: 'nightly' });
  return {
    release: async () => {
      release();
      await worker.stop();
    },
  };
}

const ACME = { queue: 'mail', key: 'acme', queued: 2, running: 1, limit: 1 };
const GLOBEX = { queue: 'mail', key: 'globex', queued: 0, running: 1, limit: 1 };
const NIGHTLY = { queue: 'bulk', key: 'nightly', queued: 1, running: 0, limit: null };

describe('concurrency keys', () => {
  it('library: the busiest keys, most running then most queued, per queue or all; limit and bad input', async () => {
    const baton = await openBaton();
    expect(await baton.queues.keys()).toEqual([]);
    const work = await keyedWork(baton);
    expect(await baton.queues.keys()).toEqual([ACME, GLOBEX, NIGHTLY]);
    expect(await baton.queues.keys('mail')).toEqual([ACME, GLOBEX]);
    expect(await baton.queues.keys('bulk')).toEqual([NIGHTLY]);
    await expect(baton.queues.keys('nope')).rejects.toThrow(/no queue named "nope"/);
    expect(await baton.queues.keys(undefined, { limit: 1 })).toEqual([ACME]);
    for (const limit of [0, 1001, 1.5, '3'] as unknown[]) {
      await expect(baton.queues.keys(undefined, { limit: limit as number }), String(limit)).rejects.toBeInstanceOf(ValidationError);
    }
    await expect(baton.queues.keys('')).rejects.toBeInstanceOf(ValidationError);
    await work.release();
  });

  it('HTTP: GET /api/queues/keys (read token) answers { keys }; a bad query → 400; a queue named "keys" is still a queue', async () => {
    const baton = await openBaton();
    const work = await keyedWork(baton);
    const app = createHttpApp(baton, { readToken: 'r', adminToken: 'a' });
    const get = async (path: string, token = 'r') => {
      const response = await app.request(path, { headers: { authorization: `Bearer ${token}` } });
      return { status: response.status, json: (await response.json()) as Record<string, any> };
    };
    expect((await app.request('/api/queues/keys')).status).toBe(401);
    expect(await get('/api/queues/keys')).toEqual({ status: 200, json: { keys: [ACME, GLOBEX, NIGHTLY] } });
    expect(await get('/api/queues/keys?queue=mail&limit=1', 'a')).toEqual({ status: 200, json: { keys: [ACME] } });
    expect(await get('/api/queues/keys?queue=bulk')).toEqual({ status: 200, json: { keys: [NIGHTLY] } });
    const unknown = await get('/api/queues/keys?queue=nope');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toMatch(/no queue named "nope"/);
    for (const bad of ['limit=0', 'limit=1001', 'limit=ten', 'queue=', 'other=1']) {
      const answer = await get(`/api/queues/keys?${bad}`);
      expect(answer, bad).toMatchObject({ status: 400, json: { error: { code: 'validation' } } });
    }
    expect((await get('/api/queues/keys?limit=0')).json.error.message).toMatch(/invalid concurrency keys query/);
    // Not captured by /api/queues/:name/...: a queue named "keys" is paused as any other.
    const paused = await app.request('/api/queues/keys/pause', { method: 'POST', headers: { authorization: 'Bearer a', 'content-type': 'application/json' }, body: JSON.stringify({ force: true }) });
    expect(await paused.json()).toEqual({ queue: 'keys', paused: true, changed: true });
    const doc = (await get('/api/openapi.json')).json;
    expect(doc.paths['/api/queues/keys']).toHaveProperty('get');
    await work.release();
  });

  it('CLI: baton keys [QUEUE] prints running/limit (—: none) and queued; empty says so; a bad --limit exits 2 with one line', async () => {
    const db = tempDatabase();
    const d = ['--database', db.url];
    const baton = await openBaton({ database: db.url });
    const empty = await runCli(['keys', ...d]);
    expect(empty).toMatchObject({ code: 0 });
    expect(empty.stdout.trim()).toBe('No concurrency keys with live jobs.');
    const work = await keyedWork(baton);

    const [all, mail, json, zero, word, typo] = await Promise.all([
      runCli(['keys', ...d]),
      runCli(['keys', 'mail', '--limit', '1', ...d]),
      runCli(['keys', 'bulk', '--json', ...d]),
      runCli(['keys', '--limit', '0', ...d]),
      runCli(['keys', '--limit', 'lots', ...d]),
      runCli(['keys', 'nope', ...d]),
    ]);
    expect(all).toMatchObject({ code: 0 });
    const lines = all.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^QUEUE\s+KEY\s+RUNNING\s+QUEUED$/);
    expect(lines.slice(1)).toHaveLength(3);
    expect(lines[1]).toMatch(/^mail\s+acme\s+1\/1\s+2$/);
    expect(lines[2]).toMatch(/^mail\s+globex\s+1\/1\s+0$/);
    expect(lines[3]).toMatch(/^bulk\s+nightly\s+0\/—\s+1$/);
    expect(mail.stdout.trim().split('\n').slice(1)).toEqual([expect.stringMatching(/^mail\s+acme\s+1\/1\s+2$/)]);
    expect(JSON.parse(json.stdout)).toEqual([NIGHTLY]);
    for (const bad of [zero, word]) {
      expect(bad.code).toBe(2);
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
      expect(bad.stderr).toMatch(/^baton: .*--limit/);
    }
    expect(zero.stderr).toMatch(/out of range 1\.\.1000/);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/no queue named "nope"/);
    await work.release();
  });
});
