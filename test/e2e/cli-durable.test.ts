import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { runCli } from '../helpers/cli.js';

describe('baton CLI: durable execution', () => {
  it('send delivers a message by id or key:KEY (exit 0), refuses a finished job (1) and a bad target (2); job prints the step log', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const inbox = defineTask('inbox', {
      handler: async (_: null, ctx) => {
        await ctx.step('charge', () => 'ch_1');
        return (await ctx.receive<{ tracking: string }>('shipped'))!.tracking;
      },
    });
    const worker = baton.worker({ tasks: [inbox], concurrency: 1 });
    await worker.start();
    const waiting = waitForEvent(worker, 'job:waiting');
    const job = await baton.enqueue(inbox, null, { key: 'order-7' });
    await waiting;

    const shown = await runCli(['job', String(job.id), '--database', db.url]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/waits for\s+waits for a message on "shipped"/);
    expect(shown.stdout).toMatch(/steps \(2\):\n\s+1\. charge · completed · attempt 1 · started \S+ · \d+ ms · result 6 bytes\n\s+2\. baton:receive:shipped · waiting · attempt 1/);

    const done = waitForEvent(worker, 'job:completed');
    const sent = await runCli(['send', 'key:order-7', 'shipped', '--payload', '{"tracking":"T-1"}', '--idempotency-key', 'k', '--database', db.url]);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(new RegExp(`^message \\d+ sent to job ${job.id} on topic shipped`));
    expect((await done).result).toBe('T-1');

    const late = await runCli(['send', String(job.id), 'shipped', '--payload', '1', '--database', db.url]);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/completed/);
    const bad = await runCli(['send', 'nope', 'shipped', '--payload', '1', '--database', db.url]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/job must be an id or key:KEY/);
    const json = await runCli(['job', String(job.id), '--json', '--database', db.url]);
    expect((JSON.parse(json.stdout) as { steps: Array<{ name: string }> }).steps.map((s) => s.name)).toEqual(['charge', 'baton:receive:shipped']);
    await worker.stop();
  });

  it('enqueue --wait prints the result (exit 0), a failure exits 1, --wait-timeout exits 124 and the job goes on', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const echo = defineTask('echo', { handler: async (p: { n: number }) => ({ doubled: p.n * 2 }) });
    const boom = defineTask('boom', { maxAttempts: 1, handler: async () => { throw new Error('kaboom'); } });
    const worker = baton.worker({ tasks: [echo, boom], concurrency: 2 });
    await worker.start();
    const ok = await runCli(['enqueue', 'echo', '--payload', '{"n":21}', '--wait', '--database', db.url]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout.trim().split('\n').at(-1)).toBe('{"doubled":42}');
    const failed = await runCli(['enqueue', 'boom', '--wait', '--database', db.url]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/failed: kaboom/);
    const slow = await runCli(['enqueue', 'nobody', '--wait', '--wait-timeout', '100', '--json', '--database', db.url]);
    expect(slow.code).toBe(124);
    expect(JSON.parse(slow.stdout)).toMatchObject({ state: 'queued' });
    const usage = await runCli(['enqueue', 'echo', '--wait-timeout', '100', '--database', db.url]);
    expect(usage.code).toBe(2);
    await worker.stop();
  });
});
