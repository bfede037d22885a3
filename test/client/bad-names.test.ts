/**
 * Names and free text that no driver can store (NUL, a lone surrogate) or no
 * definition can have, given to the admin calls, cancel and withLock: a clear error
 * from Baton on every driver, never the database's ("invalid byte sequence" on
 * PostgreSQL, a 503 through HTTP), and nothing written. Found by a fresh user's trial
 * (issue 10).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, NotFoundError, ValidationError, defineSchedule, defineTask } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton } from '../helpers/db.js';

const echo = defineTask('echo', { handler: async () => null });
const UNSTORABLE = ['a\u0000b', 'a\ud800b'];

describe('unstorable names and reasons', () => {
  it('cancel refuses a reason with a NUL or a lone surrogate, or over 10,000 characters, and the job stays queued', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(echo, null);
    for (const reason of [...UNSTORABLE, 'x'.repeat(10_001), 42 as unknown as string]) {
      const error = await baton.cancel(job.id, reason).catch((e: unknown) => e);
      expect(error, JSON.stringify(reason).slice(0, 20)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues[0]!.path).toEqual(['reason']);
    }
    expect((await baton.getJob(job.id)).state).toBe('queued');
    expect((await baton.cancel(job.id, 'x'.repeat(10_000))).outcome).toBe('cancelled');
  });

  it('schedule and service admin calls answer NotFoundError for a name no definition can have, naming it escaped', async () => {
    const baton = await openBaton();
    for (const name of [...UNSTORABLE, '', 'x'.repeat(201)]) {
      for (const call of [
        () => baton.schedules.get(name),
        () => baton.schedules.pause(name),
        () => baton.schedules.resume(name),
        () => baton.schedules.trigger(name),
        () => baton.schedules.remove(name),
        () => baton.services.get(name),
        () => baton.services.pause(name),
        () => baton.services.resume(name),
        () => baton.services.trigger(name),
      ]) {
        const error = await call().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(NotFoundError);
        expect((error as Error).message).not.toContain('\u0000');
      }
    }
  });

  it('withLock refuses a name with a NUL or a lone surrogate, or over 500 characters, before taking any lease', async () => {
    const baton = await openBaton();
    for (const name of [...UNSTORABLE, 'x'.repeat(501)]) {
      await expect(baton.withLock(name, { ttl: 1000 }, async () => 'ran')).rejects.toBeInstanceOf(ConfigError);
    }
    expect(await baton.store.leaseGet({ name: 'x'.repeat(501) })).toBeNull();
    await expect(baton.withLock('job', { ttl: 3e9 }, async () => 'ran')).rejects.toThrow(/100\.\.2147483647/);
  });

  it('enqueue refuses a task name over 200 characters (defineTask\'s limit) and an invalid Date, naming the field', async () => {
    const baton = await openBaton();
    const long = await baton.enqueue('x'.repeat(201), null).catch((e: unknown) => e);
    expect(long).toBeInstanceOf(ValidationError);
    expect((long as ValidationError).issues).toEqual([{ path: ['task'], message: expect.stringMatching(/at most 200 characters/) }]);
    const invalidDate = await baton.enqueue(echo, null, { runAt: new Date(Number.NaN) }).catch((e: unknown) => e);
    expect((invalidDate as ValidationError).issues).toEqual([{ path: ['runAt'], message: 'is an invalid Date (its time is NaN)' }]);
    expect(await baton.listJobs()).toEqual([]);
  });

  it('defineSchedule refuses an every above 2^31 - 1 ms, which would never fire', () => {
    expect(() => defineSchedule('rare', { every: 1e16, task: 'echo' })).toThrow(ConfigError);
    expect(() => defineSchedule('rare', { every: 1e16, task: 'echo' })).toThrow(/at most 2147483647 ms/);
    expect(defineSchedule('monthly-ish', { every: 2_147_483_647, task: 'echo' }).name).toBe('monthly-ish');
  });

  it('HTTP: a cancel reason with a NUL is 400 naming reason, and /api/schedules/%00/pause is 404, on every driver', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(echo, null);
    const app = createHttpApp(baton, { tasks: [echo] });
    const post = (path: string, body: unknown) => app.fetch(new Request(`http://localhost${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
    const cancel = await post(`/api/jobs/${job.id}/cancel`, { reason: 'a\u0000b' });
    expect(cancel.status).toBe(400);
    expect(await cancel.text()).toContain('reason');
    for (const path of ['/api/schedules/%00/pause', '/api/schedules/%00/trigger', '/api/services/%00/pause', '/api/services/%00/trigger']) {
      expect((await post(path, {})).status, path).toBe(404);
    }
    expect((await baton.getJob(job.id)).state).toBe('queued');
  });
});
