/**
 * POST /api/jobs hands the options to the client, which validates them once: the
 * limits the client enforces (priority, maxAttempts, key length, timeout…) answer
 * 400 naming the field, and nothing is written.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTask } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton } from '../helpers/db.js';

const greet = defineTask('greet', {
  schema: z.object({ name: z.string().min(1) }),
  handler: async (payload) => ({ hello: payload.name }),
});

async function post(app: ReturnType<typeof createHttpApp>, body: unknown) {
  const response = await app.fetch(new Request('http://localhost/api/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
  return { status: response.status, json: (await response.json()) as { error?: { code: string; message: string; issues?: Array<{ path: (string | number)[]; message: string }> } } };
}

describe('POST /api/jobs: enqueue options validated by the client', () => {
  const refused: Array<[string, Record<string, unknown>]> = [
    ['priority', { priority: 1_000_001 }],
    ['priority', { priority: -1_000_001 }],
    ['maxAttempts', { maxAttempts: 5000 }],
    ['maxAttempts', { maxAttempts: 0 }],
    ['key', { key: 'k'.repeat(1000) }],
    ['key', { key: '' }],
    ['timeout', { timeout: 0 }],
    ['timeout', { timeout: 2_147_483_648 }],
    ['queue', { queue: '' }],
    ['delay', { delay: -1 }],
    ['delay', { delay: 9007199254740991 }],
    ['runAt', { runAt: '1969-12-31T23:59:59Z' }],
    ['runAt', { runAt: '2024-02-30T00:00:00Z' }],
    ['runAt', { runAt: '2023-02-29T00:00:00Z' }],
    ['runAt', { runAt: '2024-04-31T00:00:00+02:00' }],
    ['queue', { queue: 'mail\u0000' }],
    ['queue', { queue: 'mail\ud800' }],
    ['key', { key: 'k\u0000' }],
    ['key', { key: '\udc00' }],
  ];

  it.each(refused)('options.%s out of the client\'s range (%j) → 400 naming it, nothing written', async (field, options) => {
    const writes: string[] = [];
    const baton = await openBaton({}, (op) => {
      if (op.startsWith('jobInsert')) writes.push(op);
    });
    const app = createHttpApp(baton, { tasks: [greet] });
    const answer = await post(app, { task: 'greet', payload: { name: 'Ada' }, options });
    expect(answer.status, JSON.stringify(answer.json)).toBe(400);
    expect(answer.json.error?.code).toBe('validation');
    expect(answer.json.error?.issues?.map((i) => i.path)).toEqual([['options', field]]);
    expect(answer.json.error?.message).toContain(`options.${field}`);
    expect(writes).toEqual([]);
    expect(await baton.listJobs()).toEqual([]);
  });

  it('options.runAt at the ends of the range and on 29 February of a leap year → 201 with that time', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { tasks: [greet] });
    for (const [given, stored] of [
      ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
      ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
      ['2024-02-29T12:00:00+02:00', '2024-02-29T10:00:00.000Z'],
    ]) {
      const answer = await post(app, { task: 'greet', payload: { name: 'Ada' }, options: { runAt: given } });
      expect(answer.status, JSON.stringify(answer.json)).toBe(201);
      expect((answer.json as { runAt?: string }).runAt).toBe(stored);
    }
  });

  it('a task name with a NUL or a lone surrogate (no task list) → 400 naming task, nothing written', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton);
    for (const task of ['send\u0000', 'send\ud800']) {
      const answer = await post(app, { task, payload: null });
      expect(answer.status, JSON.stringify(answer.json)).toBe(400);
      expect(answer.json.error?.issues?.map((i) => i.path)).toEqual([['task']]);
    }
    expect(await baton.listJobs()).toEqual([]);
  });

  it('GET /api/jobs with a queue or task filter holding NUL (a URL cannot carry a lone surrogate) → 400 naming it', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { tasks: [greet] });
    for (const [field, value] of [['queue', '%00'], ['task', 'a%00']]) {
      const response = await app.fetch(new Request(`http://localhost/api/jobs?${field}=${value}`));
      const json = (await response.json()) as { error?: { issues?: Array<{ path: string[] }> } };
      expect(response.status, `${field}=${value}: ${JSON.stringify(json)}`).toBe(400);
      expect(json.error?.issues?.map((i) => i.path)).toEqual([[field]]);
    }
  });

  it('the limits themselves are accepted', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { tasks: [greet] });
    const answer = await post(app, { task: 'greet', payload: { name: 'Ada' }, options: { priority: 1_000_000, maxAttempts: 1000, key: 'k'.repeat(500) } });
    expect(answer.status, JSON.stringify(answer.json)).toBe(201);
    expect(answer.json).toMatchObject({ priority: 1_000_000, maxAttempts: 1000, key: 'k'.repeat(500) });
  });

  it('an unknown option, a transaction client and a NUL in the payload → 400 with the body\'s paths', async () => {
    const baton = await openBaton();
    const app = createHttpApp(baton, { tasks: [greet] });
    const unknown = await post(app, { task: 'greet', payload: { name: 'Ada' }, options: { bogus: 1 } });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error?.issues).toEqual([{ path: ['options'], message: expect.stringContaining('bogus') }]);
    const client = await post(app, { task: 'greet', payload: { name: 'Ada' }, options: { client: { query: 1 } } });
    expect(client.status).toBe(400);
    expect(client.json.error?.issues?.map((i) => i.path)).toEqual([['options', 'client']]);
    const nul = await post(app, { task: 'greet', payload: { name: 'A\u0000' } });
    expect(nul.status).toBe(400);
    expect(nul.json.error?.issues?.map((i) => i.path)).toEqual([['payload', 'name']]);
    const schema = await post(app, { task: 'greet', payload: { name: '' } });
    expect(schema.status).toBe(400);
    expect(schema.json.error?.issues?.map((i) => i.path)).toEqual([['payload', 'name']]);
    expect(await baton.listJobs()).toEqual([]);
  });
});
