import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase, tempDir } from '../helpers/db.js';
import { until } from '../helpers/events.js';
import { runCli, spawnCli, stdoutOf } from '../helpers/cli.js';

const FILES = 200;

/** A directory of FILES real files in nested folders, plus one dangling symlink (unreadable even for root). */
function makeTree(): { dir: string; sample: { path: string; sha256: string; bytes: number } } {
  const dir = tempDir();
  let sample: { path: string; sha256: string; bytes: number } | undefined;
  for (let i = 0; i < FILES; i++) {
    const folder = join(dir, `pkg-${i % 7}`, i % 2 ? 'lib' : '');
    mkdirSync(folder, { recursive: true });
    const content = Buffer.concat([Buffer.from(`file ${i}\n`.repeat(i % 50)), randomBytes(i * 37)]);
    const path = join(folder, `file-${i}.txt`);
    writeFileSync(path, content);
    if (i === 123) {
      sample = {
        path: path.slice(dir.length + 1),
        sha256: createHash('sha256').update(content).digest('hex'),
        bytes: content.length,
      };
    }
  }
  symlinkSync(join(dir, 'gone-before-reading'), join(dir, 'dangling-link'));
  return { dir, sample: sample! };
}

const manifestOf = (out: string) => {
  const name = readdirSync(out).find((f) => f.endsWith('.json'));
  expect(name, `a manifest in ${out}`).toBeDefined();
  return JSON.parse(readFileSync(join(out, name!), 'utf8')) as {
    files: number;
    failed: number;
    bytes: number;
    entries: Array<{ i: number; path: string; state: string; sha256?: string; bytes?: number; error?: string }>;
  };
};

describe('baton demo', () => {
  it('hashes every file as a job, fails the unreadable one with a clear error, writes the manifest, and exits 0', async () => {
    const { dir, sample } = makeTree();
    const db = tempDatabase();
    const out = join(db.dir, 'demo-out');
    const run = await runCli(['demo', dir, '--database', db.url, '--out', out, '--concurrency', '4'], { timeoutMs: 50_000 });
    expect(run.code, run.stdout + run.stderr).toBe(0);

    expect(run.stdout).toContain(`${FILES + 1} files under ${dir}`);
    expect(run.stdout).toMatch(/Manifest job #\d+; cancel it from another terminal: npm run baton -- cancel \d+ --database /);
    expect(run.stdout).toMatch(/^progress: files \d+\/201/m); // not a TTY: plain lines
    expect(run.stdout).toContain(`files     ${FILES + 1}: ${FILES} hashed, 1 failed, 0 cancelled`);
    expect(run.stdout).toMatch(/speed {5}\d+ jobs in [\d.]+ s this session: \d+ jobs\/s/);
    expect(run.stdout).toMatch(/failures {2}1; the first 1:\n {4}job #\d+ dangling-link: cannot read dangling-link: ENOENT: no such file or directory/);
    expect(run.stdout).toMatch(new RegExp(`manifest  ${FILES + 1} entries written to ${out}/manifest-[\\d-]+\\.json`));

    const manifest = manifestOf(out);
    expect(manifest.files).toBe(FILES + 1);
    expect(manifest.failed).toBe(1);
    expect(manifest.entries.map((e) => e.i)).toEqual([...Array(FILES + 1).keys()]);
    const entry = manifest.entries.find((e) => e.path === sample.path)!;
    expect(entry).toMatchObject({ state: 'completed', sha256: sample.sha256, bytes: sample.bytes });
    const broken = manifest.entries.find((e) => e.path === 'dangling-link')!;
    expect(broken.state).toBe('failed');
    expect(broken.error).toMatch(/cannot read dangling-link: ENOENT/);
    const totalBytes = manifest.entries.reduce((n, e) => n + (e.bytes ?? 0), 0);
    expect(manifest.bytes).toBe(totalBytes);
    expect(run.stdout).toContain(`(${totalBytes} B)`);

    const baton = await openBaton({ database: db.url });
    const [failed] = await baton.listJobs({ state: 'failed' });
    expect(failed!.attempt).toBe(1); // non-retryable: no second attempt
    expect(failed!.errors).toHaveLength(1);
    const completed = await baton.listJobs({ state: 'completed', limit: 1000 });
    expect(completed).toHaveLength(FILES + 1); // the hashes and the manifest
    const hashed = completed.find((j) => (j.payload as { path: string }).path === sample.path)!;
    expect(hashed.result).toMatchObject({ sha256: sample.sha256, bytes: sample.bytes, gzipBytes: expect.any(Number) });
    expect((hashed.result as { gzipBytes: number }).gzipBytes).toBeGreaterThan(0);
  });

  it('Ctrl-C hands the jobs back; the next run resumes the same run and the manifest goes on from its checkpoint', async () => {
    const { dir } = makeTree();
    const db = tempDatabase();
    const out = join(db.dir, 'demo-out');
    const args = [dir, '--database', db.url, '--out', out, '--concurrency', '4'];
    const first = spawnCli(['demo', ...args, '--manifest-delay', '100']);
    const hint = await first.waitFor((m) => m.type === 'text' && /Manifest job #\d+/.test(String(m.text)), 'the manifest hint');
    const manifestId = Number(/Manifest job #(\d+)/.exec(String(hint.text))![1]);

    const baton = await openBaton({ database: db.url });
    const checkpointed = await until(async () => {
      const job = await baton.getJob(manifestId);
      return job.checkpoint !== null ? job : null;
    }, 'the manifest job saved a checkpoint', 30_000).then((job) => job!);
    expect(checkpointed.state).toBe('running');
    expect(checkpointed.attempt).toBe(1);

    first.kill('SIGINT');
    const exit = await first.exited;
    expect(exit.code, first.stderr).toBe(130);
    const firstOut = stdoutOf(first);
    expect(firstOut).toMatch(/SIGINT: stopping/);
    expect(firstOut).toMatch(/interrupted: \d+ of 201 files done/);
    // The URL is shell-quoted when it needs it (a PostgreSQL URL with ?schema=).
    expect(firstOut.replaceAll("'", '')).toContain(`To resume, run: npm run demo -- ${dir} --database ${db.url} --out ${out}`);

    const released = await baton.getJob(manifestId);
    expect(released.state).toBe('queued');
    expect(released.attempt).toBe(0); // the interrupted attempt is not counted
    const savedItems = (released.checkpoint as { forEach: { done: number[][] } }).forEach.done.reduce((n, [a, b]) => n + b! - a! + 1, 0);
    expect(savedItems).toBeGreaterThanOrEqual(50);
    expect(savedItems).toBeLessThan(FILES + 1);
    expect(firstOut).toContain(`manifest job #${manifestId} released with its checkpoint at item ${savedItems}`);
    const jobsBefore = (await baton.queueCounts('demo:')).reduce((n, c) => n + c.count, 0);
    expect(jobsBefore).toBe(FILES + 2);

    const second = await runCli(['demo', ...args], { timeoutMs: 50_000 });
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toMatch(/Resuming demo run [\d-]+ over /);
    expect(second.stdout).toContain(`resuming manifest from item ${savedItems}`);
    expect(second.stdout).toContain(`files     ${FILES + 1}: ${FILES} hashed, 1 failed, 0 cancelled`);

    const counts = await baton.queueCounts('demo:');
    expect(new Set(counts.map((c) => c.queue)).size).toBe(1); // the same run: nothing enqueued again
    expect(counts.reduce((n, c) => n + c.count, 0)).toBe(FILES + 2);
    const done = await baton.getJob(manifestId);
    expect(done.state).toBe('completed');
    expect(done.attempt).toBe(1); // one counted attempt across both runs
    const manifest = manifestOf(out);
    expect(manifest.entries.map((e) => e.i)).toEqual([...Array(FILES + 1).keys()]); // no entry twice, none missing
  });

  it('cancelling the manifest job from another terminal ends it cancelled; the demo still finishes and exits 0', async () => {
    const { dir } = makeTree();
    const db = tempDatabase();
    const out = join(db.dir, 'demo-out');
    const demo = spawnCli(['demo', dir, '--database', db.url, '--out', out, '--manifest-delay', '100']);
    const hint = await demo.waitFor((m) => m.type === 'text' && /Manifest job #\d+/.test(String(m.text)), 'the manifest hint');
    const manifestId = Number(/Manifest job #(\d+)/.exec(String(hint.text))![1]);
    const baton = await openBaton({ database: db.url });
    await until(async () => (await baton.getJob(manifestId)).state === 'running', 'the manifest job runs', 30_000);

    const cancel = await runCli(['cancel', String(manifestId), '--database', db.url]);
    expect(cancel.stdout).toMatch(/cancel requested/);
    const exit = await demo.exited;
    expect(exit.code, demo.stderr).toBe(0);
    const text = stdoutOf(demo);
    expect(text).toContain(`files     ${FILES + 1}: ${FILES} hashed, 1 failed, 0 cancelled`);
    expect(text).toMatch(new RegExp(`manifest  job #${manifestId} cancelled after \\d+ entries; partial entries in ${out}/manifest-[\\d-]+\\.jsonl`));
    expect((await baton.getJob(manifestId)).state).toBe('cancelled');
  });
});
