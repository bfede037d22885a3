/**
 * `baton schedule …`, `baton schedules` and `baton services` run as real CLI
 * processes. Each CLI run is a fresh Node process loading TypeScript (seconds on a
 * busy machine), so the commands are split over several tests, each with few runs,
 * and runs that do not depend on each other go side by side.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defineService } from 'baton-jobs';
import { runCli } from '../helpers/cli.js';
import { openBaton, tempDatabase } from '../helpers/db.js';

const scheduleNames = async (env: NodeJS.ProcessEnv) => JSON.parse((await runCli(['schedules', '--json'], { env })).stdout).map((x: { name: string }) => x.name);

describe('CLI: schedules and services', () => {
  it('schedule add stores a cron schedule; schedules lists it as a table and as JSON', async () => {
    const db = tempDatabase();
    const env = { BATON_DATABASE_URL: db.url };
    const added = await runCli(['schedule', 'add', 'nightly', '--cron', '30 2 * * *', '--timezone', 'Europe/Berlin', '--task', 'report', '--payload', '{"k":1}', '--catch-up', 'none', '--overlap', 'queue', '--json'], { env });
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/Berlin', task: 'report', payload: { k: 1 }, catchUp: 'none', overlap: 'queue', paused: false });

    const [listed, names] = await Promise.all([runCli(['schedules'], { env }), scheduleNames(env)]);
    expect(names).toEqual(['nightly']);
    expect(listed.stdout).toMatch(/^NAME\s+CADENCE\s+TASK\s+OVERLAP\s+NEXT RUN\s+LAST RUN\s+PAUSED\s+LAST BY/);
    expect(listed.stdout).toMatch(/nightly\s+cron 30 2 \* \* \* in Europe\/Berlin\s+report\s+queue/);
  });

  it('schedule add refuses a bad cron, --cron with --every, a too fast --every, a cron that never fires, and with --tasks an unknown task or a refused payload; nothing is stored', async () => {
    const db = tempDatabase();
    const env = { BATON_DATABASE_URL: db.url };
    const tasksFile = fileURLToPath(new URL('../fixtures/tasks-example.ts', import.meta.url));
    // Migrate first, so the refusals below do not race each other to create the schema
    // (`schedules` only reads: it creates nothing).
    expect((await runCli(['migrate'], { env })).code).toBe(0);
    const [bad, both, tooFast, never, unknown, invalid] = await Promise.all([
      runCli(['schedule', 'add', 'broken', '--cron', '99 * * * *', '--task', 'report'], { env }),
      runCli(['schedule', 'add', 'x', '--cron', '* * * * *', '--every', '1000', '--task', 'report'], { env }),
      runCli(['schedule', 'add', 'x', '--every', '500', '--task', 'report'], { env }),
      runCli(['schedule', 'add', 'x', '--cron', '0 0 31 2 *', '--task', 'report'], { env }),
      runCli(['schedule', 'add', 'y', '--every', '60000', '--task', 'nosuch', '--tasks', tasksFile], { env }),
      runCli(['schedule', 'add', 'y', '--every', '60000', '--task', 'greet', '--payload', '{"name":""}', '--tasks', tasksFile], { env }),
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/invalid cron "99 \* \* \* \*"/);
    expect(both.code).toBe(2);
    // Usage errors of nested subcommands are one `baton:` line with exit 2 too.
    expect(tooFast.code).toBe(2);
    expect(tooFast.stderr).toMatch(/^baton: option '--every <ms>' argument '500' is invalid/);
    expect(never.code).toBe(2);
    expect(never.stderr).toMatch(/never fires/);
    // With --tasks: an unknown task name and a payload its schema refuses are usage errors.
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^baton: unknown task "nosuch"/);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/name/);
    expect(await scheduleNames(env)).toEqual([]);
  });

  it('schedule trigger / pause / resume / remove, and remove of a missing schedule', async () => {
    const db = tempDatabase();
    const env = { BATON_DATABASE_URL: db.url };
    expect((await runCli(['schedule', 'add', 'nightly', '--cron', '30 2 * * *', '--task', 'report'], { env })).code).toBe(0);
    const triggered = await runCli(['schedule', 'trigger', 'nightly'], { env });
    expect(triggered.stdout).toMatch(/schedule nightly triggered: job \d+ enqueued/);
    expect((await runCli(['schedule', 'pause', 'nightly'], { env })).stdout).toMatch(/schedule nightly paused/);
    expect(JSON.parse((await runCli(['schedules', '--json'], { env })).stdout)[0]).toMatchObject({ name: 'nightly', paused: true });
    expect((await runCli(['schedule', 'resume', 'nightly'], { env })).stdout).toMatch(/resumed/);
    expect((await runCli(['schedule', 'remove', 'nightly'], { env })).stdout).toMatch(/removed/);
    const [missing, listed] = await Promise.all([runCli(['schedule', 'remove', 'nightly'], { env }), runCli(['schedules'], { env })]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no schedule named "nightly"/);
    expect(listed.stdout.trim()).toBe('no schedules');
  });

  it('services lists a service with its last error, as a table and as JSON', async () => {
    const db = tempDatabase();
    const env = { BATON_DATABASE_URL: db.url };
    const baton = await openBaton({ database: db.url });
    const worker = baton.worker({ tasks: [], services: [defineService('cleanup', { run: async () => { throw new Error('disk full'); } })] });
    await worker.loops.service('cleanup');
    const [services, json] = await Promise.all([runCli(['services'], { env }), runCli(['services', '--json'], { env })]);
    expect(services.stdout).toMatch(/^NAME\s+LAST RUN\s+NEXT RUN\s+HOLDER\s+LAST ERROR\s+PAUSED/);
    expect(services.stdout).toMatch(/cleanup\s+-\s+\S+\s+-\s+disk full \(1x\)\s+no/);
    expect(JSON.parse(json.stdout)[0]).toMatchObject({ name: 'cleanup', failures: 1, lastError: 'disk full' });
  });
});
