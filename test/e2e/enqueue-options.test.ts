/**
 * `baton enqueue` hands its flags to the client, which checks them once: a value
 * out of the client's range exits 2 with one line naming the flag, and nothing is
 * enqueued.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { runCli } from '../helpers/cli.js';
import { JSON_OPTION_READ_LIMIT } from '../../src/cli/options.js';

describe('baton enqueue: options checked by the client', () => {
  it('out-of-range --priority, --max-attempts, --key, --timeout, --delay: exit 2 naming the flag, nothing enqueued', async () => {
    const db = tempDatabase();
    const cases: Array<[string, string[]]> = [
      ['--priority', ['--priority', '1000001']],
      ['--max-attempts', ['--max-attempts', '5000']],
      ['--key', ['--key', 'k'.repeat(1000)]],
      ['--timeout', ['--timeout', '2147483648']],
      ['--delay', ['--delay', '-5']],
    ];
    const runs = await Promise.all(cases.map(([, flags]) => runCli(['enqueue', 'greet', '--payload', '{"name":"Ada"}', ...flags, '--database', db.url])));
    for (const [index, [flag]] of cases.entries()) {
      const run = runs[index]!;
      expect(run.code, `${flag}: ${run.stderr}`).toBe(2);
      const lines = run.stderr.trim().split('\n');
      expect(lines, flag).toHaveLength(1);
      expect(lines[0], flag).toMatch(new RegExp(`^baton: invalid enqueue options: ${flag}: `));
    }
    const baton = await openBaton({ database: db.url });
    expect(await baton.listJobs()).toEqual([]);
  });

  it('the limits themselves are accepted', async () => {
    const db = tempDatabase();
    const run = await runCli(['enqueue', 'greet', '--priority', '1000000', '--max-attempts', '1000', '--key', 'k'.repeat(500), '--database', db.url, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ priority: 1_000_000, maxAttempts: 1000, key: 'k'.repeat(500) });
  });

  it('--delay past 9999-12-31, --run-at before 1970 or on an impossible calendar date: exit 2 with one line naming the flag, nothing enqueued', async () => {
    const db = tempDatabase();
    const cases: Array<[string, string[], RegExp]> = [
      ['--delay', ['--delay', '9007199254740991'], /^baton: invalid enqueue options: --delay: .*9999-12-31T23:59:59\.999Z/],
      ['--run-at', ['--run-at', '1969-12-31T23:59:59Z'], /^baton: option '--run-at <iso>' argument '1969-12-31T23:59:59Z' is invalid\. 1969-12-31T23:59:59Z is outside the times Baton stores, 1970-01-01T00:00:00\.000Z\.\.9999/],
      ['--run-at', ['--run-at', '2024-02-30'], /^baton: .*--run-at.*2024-02-30/],
      ['--run-at', ['--run-at', '2023-02-29T10:00:00Z'], /^baton: .*--run-at.*2023-02-29/],
      ['--run-at', ['--run-at', '2024-06-31T10:00:00Z'], /^baton: .*--run-at.*2024-06-31/],
      ['--run-at', ['--run-at', '2024-01-01T24:00:00Z'], /^baton: .*--run-at/],
    ];
    const runs = await Promise.all(cases.map(([, flags]) => runCli(['enqueue', 'greet', ...flags, '--database', db.url])));
    for (const [index, [flag, , message]] of cases.entries()) {
      const run = runs[index]!;
      expect(run.code, `${flag}: ${run.stderr}`).toBe(2);
      const lines = run.stderr.trim().split('\n');
      expect(lines, flag).toHaveLength(1);
      expect(lines[0], flag).toMatch(message);
    }
    const baton = await openBaton({ database: db.url });
    expect(await baton.listJobs()).toEqual([]);
  });

  it('--run-at on 29 February of a leap year and as a bare date is accepted (UTC midnight)', async () => {
    const db = tempDatabase();
    const [leap, bare] = await Promise.all([
      runCli(['enqueue', 'greet', '--run-at', '2024-02-29T12:00:00+02:00', '--database', db.url, '--json']),
      runCli(['enqueue', 'greet', '--run-at', '2030-01-31', '--database', db.url, '--json']),
    ]);
    expect(leap.code, leap.stderr).toBe(0);
    expect(JSON.parse(leap.stdout)).toMatchObject({ runAt: '2024-02-29T10:00:00.000Z' });
    expect(bare.code, bare.stderr).toBe(0);
    expect(JSON.parse(bare.stdout)).toMatchObject({ runAt: '2030-01-31T00:00:00.000Z' });
  });

  it('--payload @FILE or - (stdin) that is not valid UTF-8: exit 2 with one line saying so, nothing enqueued', async () => {
    const db = tempDatabase();
    // {"name":"A<0xff>"}: valid JSON around one byte that is never UTF-8.
    const bytes = Buffer.concat([Buffer.from('{"name":"A'), Buffer.from([0xff]), Buffer.from('"}')]);
    const file = join(tmpdir(), `baton-bad-utf8-${process.pid}-${Date.now()}.json`);
    writeFileSync(file, bytes);
    const [fromFile, fromStdin] = await Promise.all([
      runCli(['enqueue', 'greet', '--payload', `@${file}`, '--database', db.url]),
      runCli(['enqueue', 'greet', '--payload', '-', '--database', db.url], { input: bytes }),
    ]);
    for (const [name, run] of [['@FILE', fromFile], ['stdin', fromStdin]] as const) {
      expect(run.code, `${name}: ${run.stderr}`).toBe(2);
      const lines = run.stderr.trim().split('\n');
      expect(lines, name).toHaveLength(1);
      expect(lines[0], name).toMatch(/^baton: --payload .*not valid UTF-8/);
    }
    expect(fromFile.stderr).toContain(file);
    const baton = await openBaton({ database: db.url });
    expect(await baton.listJobs()).toEqual([]);
  });

  it('--payload @/dev/zero and an endless stdin stop reading past the read limit with one line saying so; a non-JSON file is not echoed (issue 31)', async () => {
    const db = tempDatabase();
    const secret = join(tmpdir(), `baton-not-json-${process.pid}-${Date.now()}.txt`);
    writeFileSync(secret, 'password=hunter2-do-not-echo\n');
    const endless = Buffer.alloc(JSON_OPTION_READ_LIMIT + 1024, 0x20); // spaces: valid UTF-8, never JSON by itself
    const [zero, piped, notJson] = await Promise.all([
      runCli(['enqueue', 'greet', '--payload', '@/dev/zero', '--database', db.url]),
      runCli(['enqueue', 'greet', '--payload', '-', '--database', db.url], { input: endless }),
      runCli(['enqueue', 'greet', '--payload', `@${secret}`, '--database', db.url]),
    ]);
    for (const [name, run] of [['@/dev/zero', zero], ['stdin', piped]] as const) {
      expect(run.code, `${name}: ${run.stderr}`).toBe(2);
      expect(run.stderr.trim().split('\n'), name).toEqual([expect.stringMatching(new RegExp(`^baton: --payload \\(from .*\\): more than ${JSON_OPTION_READ_LIMIT} bytes; a payload is at most \\d+ bytes`))]);
    }
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/^baton: --payload \(from .*\): not valid JSON/);
    expect(notJson.stderr).not.toContain('hunter2');
    expect(notJson.stderr).not.toContain('password');
    const baton = await openBaton({ database: db.url });
    expect(await baton.listJobs()).toEqual([]);
  });
});
