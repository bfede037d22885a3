/**
 * The connections one process holds (docs/postgres.md, "Connections and
 * PgBouncer"): at most `pool_size + 1` — one pool shared by every statement and one
 * LISTEN connection shared by every worker — whatever the number of workers, their
 * concurrency and their claims in flight. Counted in pg_stat_activity by the Baton's own
 * application_name, sampled while three workers drain jobs.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { openBaton, postgresUrl, tempDatabase } from '../helpers/db.js';
import { until } from '../helpers/events.js';

const work = defineTask('conn-work', { handler: async (payload: { n: number }) => payload.n });

const admins: pg.Client[] = [];
afterEach(async () => {
  for (const admin of admins.splice(0)) await admin.end();
});

/** Drains 300 jobs with 3 workers (concurrency 20 each) in one Baton whose URL adds `params`; returns its peak connection count. */
async function peakWhileDraining(params: string): Promise<number> {
  const app = `conn_${randomBytes(4).toString('hex')}`;
  const baton = await openBaton({ database: `${tempDatabase().url}&application_name=${app}${params}` });
  const admin = new pg.Client({ connectionString: postgresUrl });
  admins.push(admin);
  await admin.connect();
  let peak = 0;
  let draining = true;
  const sampling = (async () => {
    while (draining) {
      const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [app]);
      peak = Math.max(peak, rows[0]!.n);
    }
  })();
  const workers = [0, 1, 2].map(() => baton.worker({ tasks: [work], concurrency: 20 }));
  await Promise.all(workers.map((w) => w.start()));
  await baton.enqueueMany(Array.from({ length: 300 }, (_, n) => ({ task: work, payload: { n } })));
  await until(async () => (await baton.queueCounts()).find((c) => c.state === 'completed')?.count === 300, '300 jobs completed');
  draining = false;
  await sampling;
  await baton.close();
  return peak;
}

describe('connections of one process', () => {
  it('default: at most 5 (a pool of 4 connections, one LISTEN connection shared by three workers)', async () => {
    const peak = await peakWhileDraining('');
    expect(peak).toBeLessThanOrEqual(5);
  });

  it('?pool_size=1: at most 2, claims and completions taking turns on the one pool connection', async () => {
    const peak = await peakWhileDraining('&pool_size=1');
    expect(peak).toBe(2);
  });

  it('?pool_size=3: at most 4', async () => {
    const peak = await peakWhileDraining('&pool_size=3');
    expect(peak).toBeLessThanOrEqual(4);
  });
});
