/**
 * Transactional enqueue (`{ client }`, a node-postgres client inside the caller's
 * transaction) needs the PostgreSQL driver; SQLite refuses it clearly, writing
 * nothing, rather than silently enqueueing outside the caller's transaction.
 * (The PostgreSQL behaviour is in postgres.postgres.test.ts.)
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ConfigError } from 'baton-jobs';
import { createKit } from '../fixtures/kit.js';
import { openBaton } from '../helpers/db.js';

describe('transactional enqueue on SQLite', () => {
  it('enqueue and enqueueMany with { client } → ConfigError naming PostgreSQL; no job written', async () => {
    const baton = await openBaton();
    const kit = createKit();
    // A real node-postgres client (never connected: SQLite must refuse before using it).
    const client = new pg.Client();
    for (const attempt of [
      () => baton.enqueue(kit.hash, { n: 1 }, { client }),
      () => baton.enqueueMany([{ task: kit.hash, payload: { n: 2 } }], { client }),
    ]) {
      const error = await attempt().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).code).toBe('config');
      expect((error as Error).message).toMatch(/PostgreSQL/);
    }
    expect(await baton.listJobs()).toEqual([]);
    // Without it, the same enqueue works.
    expect((await baton.enqueue(kit.hash, { n: 3 })).state).toBe('queued');
  });
});
