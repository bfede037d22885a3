/**
 * PostgreSQL keeps identifiers to 63 bytes and silently truncates longer ones.
 * Prepared statements were named `baton_<schema>_<query>`, so with a long schema
 * every name truncated to the same prefix and node-postgres / the server refused
 * the second statement ("prepared statement … already exists"); the NOTIFY channel
 * `<schema>_cancel` was too long for pg_notify. Names are now short hashes; a
 * 63-character schema (the longest legal) runs the whole cycle.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { channelPrefix, statementName } from '../../src/store/postgres/names.js';
import { openBaton, postgresUrl } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

const schemas: string[] = [];
afterEach(async () => {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    for (const schema of schemas.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
});

/** A fresh schema name of exactly 63 characters (dropped after the test). */
function longSchema(): string {
  const schema = `t_${randomBytes(6).toString('hex')}_`.padEnd(63, 'x');
  schemas.push(schema);
  return schema;
}

describe('a schema name of 63 characters', () => {
  it('runs enqueue, NOTIFY wake-up, claim, complete, cancel, locks and schedules without a name conflict', async () => {
    const schema = longSchema();
    expect(schema).toHaveLength(63);
    const url = new URL(postgresUrl);
    url.searchParams.set('schema', schema);
    const logs: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) });
    const baton = await openBaton({ database: url.toString(), logger });
    const double = defineTask('double', { handler: async (n: number) => n * 2 });
    // A minute between polls: the claims below come from the NOTIFY channel.
    const worker = baton.worker({ tasks: [double], pollInterval: 60_000, concurrency: 4 });
    await worker.start();

    for (let round = 0; round < 3; round++) {
      const jobs = await baton.enqueueMany([1, 2, 3, 4, 5, 6].map((n) => ({ task: double, payload: n + round * 10 })));
      const ids = new Set(jobs.map((j) => j.id));
      const done = new Set<number>();
      await waitForEvent(worker, 'job:completed', (e) => (ids.has(e.job.id) && done.add(e.job.id), done.size === ids.size));
      for (const job of jobs) expect(await baton.getJob(job.id)).toMatchObject({ state: 'completed', result: (job.payload as number) * 2 });
    }
    // Many other named statements on the same pool connections.
    const delayed = await baton.enqueue(double, 1, { delay: 60_000 });
    expect((await baton.cancel(delayed.id)).job.state).toBe('cancelled');
    expect((await baton.listJobs({ limit: 100 })).length).toBe(19);
    expect(await baton.queueCounts()).toContainEqual({ queue: 'default', state: 'completed', count: 18 });
    expect(await baton.withLock('long-schema', { ttl: 5000 }, async () => 'locked')).toBe('locked');
    await baton.schedule('every-hour', { every: 3_600_000, task: 'double', payload: 1 });
    expect((await baton.schedules.list()).map((s) => s.name)).toEqual(['every-hour']);
    // No warning but the one a server with autovacuum off gets (maintenance/vacuum.ts).
    expect(logs.filter((l) => !/autovacuum is off/.test(l.msg))).toEqual([]);
  });

  it('a schema of 56 characters (the longest whose name is its channel prefix): a result awaited while jobs complete, over its NOTIFY channel', async () => {
    const schema = `t_${randomBytes(6).toString('hex')}_`.padEnd(56, 'x');
    schemas.push(schema);
    expect(channelPrefix(schema)).toBe(schema);
    const url = new URL(postgresUrl);
    url.searchParams.set('schema', schema);
    const baton = await openBaton({ database: url.toString() });
    const double = defineTask('double', { handler: async (n: number) => n * 2 });
    const worker = baton.worker({ tasks: [double], concurrency: 2 });
    await worker.start();
    // While a result is awaited, every completion NOTIFYs `<prefix>_done` (migration 23): a
    // channel name over 63 bytes would make pg_notify fail the completing transaction.
    const jobs = await baton.enqueueMany([1, 2, 3].map((n) => ({ task: double, payload: n })));
    expect(await Promise.all(jobs.map((j) => baton.waitForResult(j.id, { timeout: 60_000 })))).toEqual([2, 4, 6]);
    expect(`${channelPrefix(schema)}_done`.length).toBeLessThanOrEqual(63);
  });

  it('statement names and channel prefixes stay within 63 bytes and differ per schema', () => {
    const a = longSchema();
    const b = `${a.slice(0, 62)}y`;
    const text = (schema: string) => `SELECT * FROM "${schema}".schedules WHERE NOT paused`;
    expect(statementName('schedule_earliest', text(a)).length).toBeLessThanOrEqual(63);
    expect(statementName('schedule_earliest', text(a))).not.toBe(statementName('schedule_earliest', text(b)));
    expect(`${channelPrefix(a)}_cancel`.length).toBeLessThanOrEqual(63);
    expect(channelPrefix(a)).not.toBe(channelPrefix(b));
    expect(channelPrefix('baton')).toBe('baton'); // short schemas keep their channels
  });
});
