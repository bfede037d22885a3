import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openBaton, tempDatabase, tempDir } from '../helpers/db.js';
import { until } from '../helpers/events.js';
import { runCli, spawnCli, stdoutOf } from '../helpers/cli.js';
import { planDemo } from '../../src/demo/plan.js';
import { listFullJobs } from '../helpers/client.js';

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
    const run = await runCli(['demo', dir, '--database', db.url, '--out', out, '--concurrency', '4']);
    expect(run.code, run.stdout + run.stderr).toBe(0);

    expect(run.stdout).toContain(`${FILES + 1} files under ${dir}`);
    expect(run.stdout).toMatch(/Manifest job #\d+; cancel it from another terminal: npx baton cancel \d+ --database /);
    expect(run.stdout).toMatch(/^progress: files \d+\/201/m); // not a TTY: plain lines
    expect(run.stdout).toContain(`files     ${FILES + 1}: ${FILES} hashed, 1 failed, 0 cancelled`);
    expect(run.stdout).toMatch(/speed {5}\d+ jobs in [\d.]+ s this session: \d+ jobs\/s/);
    expect(run.stdout).toMatch(/failures {2}1:\n {4}job #\d+ dangling-link: cannot read dangling-link: ENOENT: no such file or directory/);
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
    const [failed] = await listFullJobs(baton, { state: 'failed' });
    expect(failed!.attempt).toBe(1); // non-retryable: no second attempt
    expect(failed!.errors).toHaveLength(1);
    const completed = await listFullJobs(baton, { state: 'completed', limit: 1000 });
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
    }, 'the manifest job saved a checkpoint').then((job) => job!);
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

    const second = await runCli(['demo', ...args]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toMatch(/Resuming demo run [\d-]+ over /);
    expect(second.stdout).toContain(`resuming manifest from item ${savedItems}`);
    // Its first step is read back from storage, not run again (ctx.step).
    expect(second.stdout).toContain('manifest step "list hash jobs" replayed from storage (not run again)');
    expect((await baton.store.jobStepList({ id: manifestId })).map((s) => [s.name, s.state])).toEqual([['list hash jobs', 'completed'], ['write manifest', 'completed']]);
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
    await until(async () => (await baton.getJob(manifestId)).state === 'running', 'the manifest job runs');

    const cancel = await runCli(['cancel', String(manifestId), '--database', db.url]);
    expect(cancel.stdout).toMatch(/cancel requested/);
    const exit = await demo.exited;
    expect(exit.code, demo.stderr).toBe(0);
    const text = stdoutOf(demo);
    expect(text).toContain(`files     ${FILES + 1}: ${FILES} hashed, 1 failed, 0 cancelled`);
    const said = new RegExp(`manifest  job #${manifestId} cancelled after (\\d+) entr(y|ies); partial entries in (${out}/manifest-[\\d-]+\\.jsonl)`).exec(text);
    expect(said, text).not.toBeNull();
    // The count is the real one: the lines in the partial file (not the last throttled progress value),
    // which hold at least every item the checkpoint records.
    const lines = readFileSync(said![3]!, 'utf8').split('\n').filter(Boolean).length;
    expect(Number(said![1])).toBe(lines);
    const cancelled = await baton.getJob(manifestId);
    expect(cancelled.state).toBe('cancelled');
    const checkpointed = (cancelled.checkpoint as { forEach: { done: number[][] } } | null)?.forEach.done.reduce((n, [a, b]) => n + b! - a! + 1, 0) ?? 0;
    expect(lines).toBeGreaterThanOrEqual(checkpointed);
  });

  it('--fresh starts a new run and cancels the older unfinished run over the directory, saying so', async () => {
    const { dir } = makeTree();
    const db = tempDatabase();
    const out = join(db.dir, 'demo-out');
    const baton = await openBaton({ database: db.url });
    const old = await planDemo(baton, { dir, out }); // an unfinished run nobody works

    const run = await runCli(['demo', dir, '--fresh', '--database', db.url, '--out', out]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Demo run [\d-]+: 201 files under /m); // a new run, not a resume
    expect(run.stdout).toContain(`--fresh: cancelled ${FILES + 2} unfinished jobs of the older demo run ${old.runId} over this directory`);
    expect(run.stdout).toContain(`files     ${FILES + 1}: ${FILES} hashed, 1 failed, 0 cancelled`);

    const counts = await baton.queueCounts('demo:');
    const oldCounts = counts.filter((c) => c.queue === old.queue && c.count > 0);
    expect(oldCounts).toEqual([expect.objectContaining({ state: 'cancelled', count: FILES + 2 })]);
    const [manifest] = await baton.listJobs({ queue: old.queue, task: 'demo:manifest' });
    expect(manifest!.cancelReason).toMatch(/--fresh/);
  });

  it('a second demo on the same run while the first works it resumes beside it and does not call its jobs left over', async () => {
    const { dir } = makeTree();
    const db = tempDatabase();
    const out = join(db.dir, 'demo-out');
    const first = spawnCli(['demo', dir, '--database', db.url, '--out', out, '--concurrency', '4', '--manifest-delay', '100']);
    const hint = await first.waitFor((m) => m.type === 'text' && /Manifest job #\d+/.test(String(m.text)), 'the manifest hint');
    const manifestId = Number(/Manifest job #(\d+)/.exec(String(hint.text))![1]);
    const baton = await openBaton({ database: db.url });
    await until(async () => (await baton.getJob(manifestId)).state === 'running', 'the first demo runs the manifest job');

    const second = await runCli(['demo', dir, '--database', db.url, '--out', out, '--concurrency', '4']);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toMatch(/Resuming demo run [\d-]+ over /);
    expect(second.stdout).toMatch(/\d+ jobs? of this run (is|are) running under a live lease: another demo is working this run now/);
    expect(second.stdout).not.toMatch(/did not stop cleanly/);
    expect((await first.exited).code, first.stderr).toBe(0);
    expect((await baton.getJob(manifestId)).attempt).toBe(1); // taken over by nobody
  });

  it('an --out path that cannot be a directory, or a DIR that is not one, is one line and exit 2; nothing is enqueued', async () => {
    const db = tempDatabase();
    const file = join(db.dir, 'a-file');
    writeFileSync(file, 'x');
    const [badOut, badDir] = await Promise.all([
      runCli(['demo', db.dir, '--out', join(file, 'out'), '--database', db.url]),
      runCli(['demo', file, '--database', db.url]),
    ]);
    for (const run of [badOut, badDir]) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    expect(badOut.stderr.trim()).toBe(`baton: cannot create the --out directory ${join(file, 'out')}: ENOTDIR: not a directory, mkdir '${join(file, 'out')}'`);
    expect(badDir.stderr.trim()).toBe(`baton: ${file} is not a directory`);
    const baton = await openBaton({ database: db.url });
    expect(await baton.listJobs()).toEqual([]);
  });
});
