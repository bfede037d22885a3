import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase, testDriver } from '../helpers/db.js';
import { runCli } from '../helpers/cli.js';

const json = <T = Record<string, unknown>>(text: string) => JSON.parse(text) as T;
/** A user error: exactly one line on stderr. */
const oneLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

// Each test starts a dozen CLI processes one after another (each loads the CLI under tsx,
// seconds apiece on a loaded 2-core machine): a hang-catcher sized for that, not a speed bound.
describe(`baton queue, queues, delete, purge and bulk retry/cancel (${testDriver})`, { timeout: 300_000 }, () => {
  it('pause and resume by name, listed by `baton queues`; bulk commands count with --dry-run, then act; bad input exits 1 or 2 with one line and changes nothing', async () => {
    const db = tempDatabase();
    const d = ['--database', db.url];
    const baton = await openBaton({ database: db.url });
    const jobs = await baton.enqueueMany([1, 2, 3].map((n) => ({ task: 'greet', payload: { n }, options: { queue: 'mail' } })));
    const [running] = await baton.store.jobClaim({ workerId: 'w', tasks: ['greet'], queues: ['mail'], limit: 1, leaseMs: 600_000, now: baton.clock.now() });
    expect(running!.id).toBe(jobs[0]!.id);

    const [typo, noFilter, both, dryId, purgeAll, deleteRunning] = await Promise.all([
      runCli(['queue', 'pause', 'mial', ...d]),
      runCli(['cancel', ...d]),
      runCli(['retry', String(jobs[1]!.id), '--queue', 'mail', ...d]),
      runCli(['cancel', String(jobs[1]!.id), '--dry-run', ...d]),
      runCli(['purge', ...d]),
      runCli(['delete', String(running!.id), ...d]),
    ]);
    expect(typo.code).toBe(1);
    expect(oneLine(typo.stderr)).toMatch(/no queue named "mial"/);
    expect(noFilter.code).toBe(2);
    expect(oneLine(noFilter.stderr)).toMatch(/give a job id, or filter flags .* or --all/);
    expect(both.code).toBe(2);
    expect(dryId.code).toBe(2);
    expect(oneLine(dryId.stderr)).toMatch(/--dry-run counts the jobs matching filter flags/);
    expect(purgeAll.code).toBe(2);
    expect(oneLine(purgeAll.stderr)).toMatch(/purge: give filter flags .* or --all/);
    expect(deleteRunning.code).toBe(1);
    expect(oneLine(deleteRunning.stderr)).toBe(`baton: job ${running!.id} is running; a running job cannot be deleted (cancel it first)`);
    expect((await baton.queues.list()).map((q) => [q.name, q.paused, q.counts.queued, q.counts.running])).toEqual([['mail', false, 2, 1]]);

    const paused = await runCli(['queue', 'pause', 'mail', '--json', ...d]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(json(paused.stdout)).toEqual({ queue: 'mail', paused: true, changed: true });
    const listed = await runCli(['queues', ...d]);
    // queued, latency (the age of the oldest due job: wall-clock here), running, rate, finished counts, unserved tasks.
    expect(listed.stdout).toMatch(/^mail\s+paused since \S+\s+2\s+(-|\d+(ms|s|m))\s+1\s+-\s+0\s+0\s+0\s+greet\(2\)$/m);
    expect(listed.stderr).toBe('warning: queue "mail": no live worker serves this queue at all; waiting: "greet" (2 due)\n');

    const dry = await runCli(['cancel', '--queue', 'mail', '--dry-run', '--json', ...d]);
    expect(json(dry.stdout)).toEqual({ dryRun: true, matched: 3, cancelled: 0, requested: 0 });
    const cancelled = await runCli(['cancel', '--queue', 'mail', '--reason', 'bulk', ...d]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toBe('2 queued jobs cancelled; cancel requested for 1 running job (their workers abort them now)\n');
    expect((await baton.getJob(running!.id)).cancelReason).toBe('bulk');

    const retried = await runCli(['retry', '--state', 'cancelled', '--queue', 'mail', '--json', ...d]);
    expect(json(retried.stdout)).toEqual({ dryRun: false, matched: 2, retried: 2 });
    await baton.cancel(jobs[1]!.id);
    const deleted = await runCli(['delete', String(jobs[1]!.id), ...d]);
    expect(deleted.stdout).toBe(`job ${jobs[1]!.id} deleted (it was cancelled)\n`);
    await baton.cancel(jobs[2]!.id);
    const purged = await runCli(['purge', '--queue', 'mail', ...d]);
    expect(purged.stdout).toBe('1 finished job deleted\n');
    expect((await baton.listJobs()).map((j) => j.id)).toEqual([running!.id]);

    const resumed = await runCli(['queue', 'resume', 'mail', ...d]);
    expect(resumed.stdout).toBe('queue mail resumed\n');
    expect((await baton.queues.list())[0]).toMatchObject({ name: 'mail', paused: false });
  });

  it('bulk flags: a time outside 1970..9999 or a too long reason is refused naming its flag, with nothing changed; --limit bounds the jobs touched', async () => {
    const db = tempDatabase();
    const d = ['--database', db.url];
    const baton = await openBaton({ database: db.url });
    const jobs = await baton.enqueueMany([1, 2, 3].map((n) => ({ task: 'greet', payload: { n }, options: { queue: 'mail' } })));
    const before = await baton.listJobs();

    const [farFuture, fiveDigits, beforeEpoch, longReason, longBulkReason, badLimit] = await Promise.all([
      runCli(['cancel', '--queue', 'mail', '--created-before', '9999-12-31T23:59:60Z', ...d]),
      runCli(['cancel', '--queue', 'mail', '--created-before', '10000-01-01', ...d]),
      runCli(['retry', '--queue', 'mail', '--finished-before', '1969-12-31', ...d]),
      runCli(['cancel', String(jobs[0]!.id), '--reason', 'x'.repeat(10_001), ...d]),
      runCli(['cancel', '--queue', 'mail', '--reason', 'x'.repeat(10_001), ...d]),
      runCli(['cancel', '--queue', 'mail', '--limit', '0', ...d]),
    ]);
    expect(farFuture.code).toBe(2);
    expect(oneLine(farFuture.stderr)).toMatch(/'--created-before <time>' .*Time 23:59:60 does not exist/);
    expect(fiveDigits.code).toBe(2);
    expect(oneLine(fiveDigits.stderr)).toMatch(/'--created-before <time>' .*Year 10000 does not have 4 digits: times are within 1970\.\.9999/);
    expect(beforeEpoch.code).toBe(2);
    expect(oneLine(beforeEpoch.stderr)).toMatch(/'--finished-before <time>' .*1969-12-31 is outside the times Baton stores, 1970-01-01T00:00:00\.000Z\.\.9999-12-31T23:59:59\.999Z/);
    expect(longReason.code).toBe(2);
    expect(oneLine(longReason.stderr)).toBe('baton: invalid cancel reason: --reason: at most 10000 characters (got 10001)');
    expect(longBulkReason.code).toBe(2);
    expect(oneLine(longBulkReason.stderr)).toMatch(/^baton: invalid cancel options: --reason: /);
    expect(badLimit.code).toBe(2);
    expect(oneLine(badLimit.stderr)).toMatch(/'--limit <n>' .*0 is out of range 1\.\./);
    expect(await baton.listJobs()).toEqual(before);

    const limited = await runCli(['cancel', '--queue', 'mail', '--limit', '2', '--json', ...d]);
    expect(json(limited.stdout)).toEqual({ dryRun: false, matched: 2, cancelled: 2, requested: 0 });
    expect((await baton.listJobs()).sort((a, b) => a.id - b.id).map((j) => j.state)).toEqual(['cancelled', 'cancelled', 'queued']);
  });
});
