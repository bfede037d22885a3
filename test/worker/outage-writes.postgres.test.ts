/**
 * Writes a running handler makes go through a short database outage (found by a
 * new-user run through PgBouncer: a checkpoint saved while PgBouncer was down failed
 * the attempt). The worker reaches PostgreSQL through a TCP proxy in the test process;
 * cutting it makes the database unreachable for that worker only.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createBaton, defineTask } from 'baton-jobs';
import { openBaton, postgresUrl, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

describe('a short outage while a handler runs', () => {
  it('saveCheckpoint is retried until the database answers again: the attempt does not fail, the checkpoint is stored, and the retries log a few lines, not one each', async () => {
    const db = tempDatabase();
    const direct = await openBaton({ database: db.url }); // migrates the schema, directly
    const target = new URL(postgresUrl);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(db.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);

    const lines: Array<{ level: number; msg: string; op?: string }> = [];
    let onLine: (() => void) | undefined;
    const logger = pino({ level: 'info' }, { write: (line: string) => void (lines.push(JSON.parse(line) as (typeof lines)[number]), onLine?.()) });
    const baton = await createBaton({ database: url.toString(), logger });
    let cutNow!: () => void;
    const atCut = new Promise<void>((resolve) => (cutNow = resolve));
    let proceed!: () => void;
    const cutDone = new Promise<void>((resolve) => (proceed = resolve));
    const steps = defineTask('steps', {
      maxAttempts: 1, // a failed attempt would fail the job for good
      handler: async (_: null, ctx) => {
        await ctx.saveCheckpoint({ step: 1 });
        cutNow();
        await cutDone;
        await ctx.saveCheckpoint({ step: 2 }); // the database is unreachable now
        return 'done';
      },
    });
    const worker = baton.worker({ tasks: [steps], pollInterval: 100, heartbeatInterval: 60_000, leaseTtl: 120_000 });
    await worker.start();
    const job = await direct.enqueue(steps, null);
    await atCut;
    await proxy.cut();
    // Wait until the checkpoint write has failed at least twice (it is being retried), then bring the database back.
    const retried = new Promise<void>((resolve) => {
      onLine = () => lines.filter((l) => l.op === 'jobCheckpoint').length >= 1 && resolve();
    });
    proceed();
    await retried;
    await proxy.restore();
    const completed = await waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    expect(completed.result).toBe('done');
    expect(await direct.getJob(job.id)).toMatchObject({ state: 'completed', attempt: 1, errors: [], checkpoint: { step: 2 } });
    const retryLines = lines.filter((l) => l.op === 'jobCheckpoint');
    expect(retryLines.filter((l) => l.level === 40).length).toBeLessThanOrEqual(3);
    expect(retryLines.some((l) => l.msg === 'database write succeeded after retrying')).toBe(true);
    await worker.stop();
    await baton.close();
  });
});
