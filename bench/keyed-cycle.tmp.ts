// scratch: mean ms of a complete-and-claim cycle of 50, keyed (10,000 keys at limit 1) vs unkeyed, on one connection
import { defineTask } from 'baton-jobs';
import { openClient } from './lib/seed.js';
import { withAdmin, postgresUrl, schemaUrl } from './lib/drivers.js';

const server = process.env.SCRATCH_URL ?? postgresUrl;
const explainCycles = Number(process.env.EXPLAIN_CYCLES ?? 0);
const keyed = defineTask('noop', { concurrency: { limit: 1 }, handler: async () => null });
async function one(kind: 'keyed' | 'plain') {
  const schema = `scratch_${kind}_${process.pid}`;
  const url = schemaUrl(server, schema);
  const filler = await openClient(url);
  for (let from = 0; from < 20_000; from += 1000) {
    const items = [];
    for (let i = from; i < from + 1000; i++) items.push(kind === 'keyed' ? { task: keyed, payload: { i }, options: { concurrencyKey: `k${i % 10_000}` } } : { task: 'noop', payload: { i } });
    await filler.enqueueMany(items as never);
  }
  await filler.close();
  await withAdmin(async (c) => { await c.query(`VACUUM ANALYZE ${schema}.jobs`); }, server);
  const client = await openClient(explainCycles ? `${url}&options=${encodeURIComponent('-c auto_explain.log_min_duration=0')}` : url);
  const base = { workerId: 'b', tasks: ['noop'], queues: ['default'], limit: Number(process.env.LIMIT ?? 50), leaseMs: 60_000 };
  let claimed = await client.store.jobClaim({ ...base, now: Date.now() });
  let total = 0, n = 0, jobs = claimed.length;
  const t0 = performance.now();
  while (claimed.length > 0 && (!explainCycles || n < explainCycles)) {
    const s = performance.now();
    const r = await client.store.jobCompleteAndClaim({ ...base, now: Date.now(), items: claimed.map((j) => ({ id: j.id, token: j.leaseToken, result: 'null' })) });
    total += performance.now() - s; n++;
    claimed = r.claimed; jobs += claimed.length;
  }
  const all = performance.now() - t0;
  console.log(kind, 'cycles', n, 'mean ms', (total / n).toFixed(2), 'jobs', jobs, 'jobs/s', Math.round(jobs / all * 1000));
  await client.close();
  await withAdmin(async (c) => { await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`); }, server);
}
const kinds = (process.env.KINDS ?? 'plain,keyed').split(',') as Array<'plain' | 'keyed'>;
for (let r = 0; r < Number(process.argv[2] ?? 2); r++) for (const k of kinds) await one(k);
