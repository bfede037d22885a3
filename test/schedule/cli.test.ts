import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defineService } from 'baton-jobs';
import { runCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';

describe('CLI: schedules and services', () => {
  it('schedule add / schedules / trigger / pause / resume / remove, and services', async () => {
    const db = tempDatabase();
    const env = { BATON_DATABASE_URL: db.url };
    const added = await runCli(['schedule', 'add', 'nightly', '--cron', '30 2 * * *', '--timezone', 'Europe/Berlin', '--task', 'report', '--payload', '{"k":1}', '--catch-up', 'none', '--json'], { env });
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/Berlin', task: 'report', payload: { k: 1 }, catchUp: 'none', paused: false });

    const bad = await runCli(['schedule', 'add', 'broken', '--cron', '99 * * * *', '--task', 'report'], { env });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/invalid cron "99 \* \* \* \*"/);
    const both = await runCli(['schedule', 'add', 'x', '--cron', '* * * * *', '--every', '1000', '--task', 'report'], { env });
    expect(both.code).toBe(2);
    // Usage errors of nested subcommands are one `baton:` line with exit 2 too.
    const tooFast = await runCli(['schedule', 'add', 'x', '--every', '500', '--task', 'report'], { env });
    expect(tooFast.code).toBe(2);
    expect(tooFast.stderr).toMatch(/^baton: option '--every <ms>' argument '500' is invalid/);
    const never = await runCli(['schedule', 'add', 'x', '--cron', '0 0 31 2 *', '--task', 'report'], { env });
    expect(never.code).toBe(2);
    expect(never.stderr).toMatch(/never fires/);
    // With --tasks: an unknown task name and a payload its schema refuses are usage errors, nothing stored.
    const tasksFile = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));
    const unknown = await runCli(['schedule', 'add', 'y', '--every', '60000', '--task', 'nosuch', '--tasks', tasksFile], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^baton: unknown task "nosuch"/);
    const invalid = await runCli(['schedule', 'add', 'y', '--every', '60000', '--task', 'greet', '--payload', '{"name":""}', '--tasks', tasksFile], { env });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/name/);
    expect(JSON.parse((await runCli(['schedules', '--json'], { env })).stdout).map((x: { name: string }) => x.name)).toEqual(['nightly']);

    const listed = await runCli(['schedules'], { env });
    expect(listed.stdout).toMatch(/^NAME\s+CADENCE\s+TASK\s+NEXT RUN\s+LAST RUN\s+PAUSED\s+LAST BY/);
    expect(listed.stdout).toMatch(/nightly\s+cron 30 2 \* \* \* in Europe\/Berlin\s+report/);

    const triggered = await runCli(['schedule', 'trigger', 'nightly'], { env });
    expect(triggered.stdout).toMatch(/schedule nightly triggered: job \d+ enqueued/);
    expect((await runCli(['schedule', 'pause', 'nightly'], { env })).stdout).toMatch(/schedule nightly paused/);
    expect(JSON.parse((await runCli(['schedules', '--json'], { env })).stdout)[0]).toMatchObject({ name: 'nightly', paused: true });
    expect((await runCli(['schedule', 'resume', 'nightly'], { env })).stdout).toMatch(/resumed/);
    expect((await runCli(['schedule', 'remove', 'nightly'], { env })).stdout).toMatch(/removed/);
    const missing = await runCli(['schedule', 'remove', 'nightly'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no schedule named "nightly"/);
    expect((await runCli(['schedules'], { env })).stdout.trim()).toBe('no schedules');

    const baton = await openBaton({ database: db.url });
    const worker = baton.worker({ tasks: [], services: [defineService('cleanup', { run: async () => { throw new Error('disk full'); } })] });
    await worker.loops.service('cleanup');
    const services = await runCli(['services'], { env });
    expect(services.stdout).toMatch(/^NAME\s+LAST RUN\s+NEXT RUN\s+HOLDER\s+LAST ERROR\s+PAUSED/);
    expect(services.stdout).toMatch(/cleanup\s+-\s+\S+\s+-\s+disk full \(1x\)\s+no/);
    expect(JSON.parse((await runCli(['services', '--json'], { env })).stdout)[0]).toMatchObject({ name: 'cleanup', failures: 1, lastError: 'disk full' });
  });
});
