import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { rawQuery } from '../helpers/raw.js';
import { runCli } from '../helpers/cli.js';

/**
 * What a job's text can do to the operator's terminal through the CLI: nothing.
 * The jobs here carry escape sequences in every field the CLI prints (stored
 * behind the API's back, as an older version or another client may have written
 * them), and the human output must show them escaped.
 */
const ESC = '\u001b';
const CLEAR = `${ESC}[2J`;
const TITLE = `${ESC}]0;pwned\u0007`;
const CSI_C1 = '\u009b31m';
const RLO = '\u202e';
/** Invisible: a zero-width space and a BOM (issue 31); two keys differing by these look alike. */
const INVISIBLE = '\u200b\ufeff';

/** Raw bytes a terminal would obey: C0 controls other than LF, DEL, C1, bidi overrides/isolates, line/paragraph separators. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;

async function hostileJob(db: ReturnType<typeof tempDatabase>): Promise<number> {
  const baton = await openBaton({ database: db.url });
  const job = await baton.enqueue('plain', { n: 1 });
  await baton.close();
  const errors = JSON.stringify([{ attempt: 1, time: Date.UTC(2030, 0, 1), message: `boom${CLEAR}\r\nfake line${TITLE}`, stack: null }]);
  const progress = JSON.stringify({ current: 1, total: 2, message: `${CSI_C1}half${RLO}done` });
  await rawQuery(db, `UPDATE jobs SET task = ?, queue = ?, key = ?, errors = ?, progress = ? WHERE id = ?`, [
    `task${CLEAR}`,
    `q${TITLE}`,
    `key\rX${RLO}${INVISIBLE}`,
    errors,
    progress,
    job.id,
  ]);
  return job.id;
}

describe('CLI output of hostile job text', () => {
  it('jobs and job show control characters escaped (no raw ESC, BEL, CR, C1 or bidi override); --json keeps the exact strings', async () => {
    const db = tempDatabase();
    const id = await hostileJob(db);
    const [list, one, json, listJson] = await Promise.all([
      runCli(['jobs', '--database', db.url]),
      runCli(['job', String(id), '--database', db.url]),
      runCli(['job', String(id), '--json', '--database', db.url]),
      runCli(['jobs', '--json', '--database', db.url]),
    ]);
    for (const run of [list, one, json, listJson]) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).not.toMatch(RAW_CONTROL);
    }
    expect(list.stdout).toContain('task\\x1b[2J');
    expect(list.stdout).toContain('q\\x1b]0;pwned\\x07');
    expect(list.stdout).toContain('\\x9b31mhalf\\u202edone');
    expect(list.stdout.trim().split('\n')).toHaveLength(2); // header and one row: no faked line

    expect(one.stdout).toContain('task\\x1b[2J');
    expect(one.stdout).toContain('key\\x0dX\\u202e\\u200b\\ufeff');
    expect(one.stdout).toContain('boom\\x1b[2J\\x0d\\x0afake line\\x1b]0;pwned\\x07');
    expect(one.stdout).not.toMatch(/^fake line/m);

    // JSON stays exact: parsing it gives back the stored strings, escapes included.
    const detail = JSON.parse(json.stdout) as { task: string; queue: string; key: string; errors: Array<{ message: string }>; progress: { message: string } };
    expect(detail.task).toBe(`task${CLEAR}`);
    expect(detail.queue).toBe(`q${TITLE}`);
    expect(detail.key).toBe(`key\rX${RLO}${INVISIBLE}`);
    expect(detail.errors[0]!.message).toBe(`boom${CLEAR}\r\nfake line${TITLE}`);
    expect(detail.progress.message).toBe(`${CSI_C1}half${RLO}done`);
    expect((JSON.parse(listJson.stdout) as Array<{ id: number }>).map((j) => j.id)).toEqual([id]);
  });

  it('schedules and services show a hostile name, task, holder and last error escaped', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    await baton.schedule('nightly', { task: 'plain', cron: '0 3 * * *' });
    await baton.store.serviceEnsure({ name: 'sync', now: Date.now() });
    await baton.close();
    await rawQuery(db, 'UPDATE schedules SET name = ?, task = ?', [`night${CLEAR}`, `t${TITLE}`]);
    await rawQuery(db, 'UPDATE services SET name = ?, last_error = ?, failures = 1', [`svc${RLO}`, `down\r\n${CSI_C1}x`]);
    const [schedules, services, schedulesJson] = await Promise.all([
      runCli(['schedules', '--database', db.url]),
      runCli(['services', '--database', db.url]),
      runCli(['schedules', '--json', '--database', db.url]),
    ]);
    for (const run of [schedules, services, schedulesJson]) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).not.toMatch(RAW_CONTROL);
    }
    expect(schedules.stdout).toMatch(/^night\\x1b\[2J\s+.*t\\x1b\]0;pwned\\x07/m);
    expect(services.stdout).toMatch(/^svc\\u202e\s+.*down\\x0d\\x0a\\x9b31mx \(1x\)/m);
    expect(services.stdout.trim().split('\n')).toHaveLength(2);
    expect((JSON.parse(schedulesJson.stdout) as Array<{ name: string }>)[0]!.name).toBe(`night${CLEAR}`);
  });

  it('an error message quoting hostile text is one escaped line on stderr', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    await baton.close();
    const run = await runCli(['jobs', '--state', `x${CLEAR}\ry`, '--database', db.url]);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toMatch(RAW_CONTROL);
    expect(run.stderr).toContain('x\\x1b[2J\\x0dy');
  });
});
