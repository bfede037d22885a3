/**
 * `baton enqueue` hands its flags to the client, which checks them once: a value
 * out of the client's range exits 2 with one line naming the flag, and nothing is
 * enqueued.
 */
import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { runCli } from '../helpers/cli.js';

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
});
