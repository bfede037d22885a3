import { Command } from 'commander';
import { defaultDemoDir, DemoError, planDemo, type DemoPlan } from '../../demo/plan.js';
import { DEMO_LEASE_TTL, startDemo, summarize, type DemoSession, type DemoStatus, type DemoSummary } from '../../demo/run.js';
import { defaultDatabaseUrl, redact } from '../../store/open.js';
import { UsageError, integer, milliseconds, openBaton, withDatabase } from '../options.js';
import { bytes, out, plural, printable, progressDisplay, type ProgressDisplay } from '../output.js';
import { exitWhenIdle, onShutdownSignals } from '../signals.js';

interface DemoFlags {
  database?: string;
  concurrency: number;
  out: string;
  fresh?: boolean;
  manifestDelay?: number;
  drainTimeout?: number;
}

/** Exit codes after a signal: 128 + signal number, as shells report them. */
const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * `baton demo [DIR]`: hashes every file under DIR (default: this package's
 * node_modules) as one job per file, beside one long manifest job, with progress
 * bars and a summary. Ctrl-C hands the jobs back (the manifest keeps its
 * checkpoint); running it again resumes that run. See src/demo/run.ts.
 */
export function demoCommand(): Command {
  return withDatabase(new Command('demo'))
    .description('hash every file under DIR as jobs, beside a long checkpointing manifest job; Ctrl-C and run again to resume')
    .argument('[dir]', 'directory to read (default: this package\'s node_modules)')
    .option('--concurrency <n>', 'jobs at once, at least 2', integer(2, 1000), 8)
    .option('--out <dir>', 'where the manifest is written', './baton-demo')
    .option('--fresh', 'start a new run; the older unfinished runs over DIR are cancelled (unless another demo is working one)')
    .option('--drain-timeout <ms>', 'on Ctrl-C: time running jobs get to finish before the rest are aborted and released', milliseconds, 1000)
    .option('--manifest-delay <ms>', 'extra time per manifest entry (for tests: makes a small run long enough to interrupt)', milliseconds)
    .action(async (dir: string | undefined, flags: DemoFlags) => {
      const baton = await openBaton({ database: flags.database }, 'error');
      try {
        const code = await runDemoCommand(baton, dir, flags);
        process.exitCode = code;
      } catch (error) {
        if (error instanceof DemoError) throw new UsageError(error.message);
        throw error;
      } finally {
        await baton.close();
      }
      exitWhenIdle();
    });
}

async function runDemoCommand(baton: Awaited<ReturnType<typeof openBaton>>, dir: string | undefined, flags: DemoFlags): Promise<number> {
  const database = flags.database ?? defaultDatabaseUrl();
  const plan = await planDemo(baton, { dir: dir ?? defaultDemoDir(), out: flags.out, ...(flags.fresh ? { fresh: true } : {}) });
  const dbFlag = flags.database ? ` --database ${quote(flags.database)}` : '';
  if (plan.resumed) {
    out(`Resuming demo run ${plan.runId} over ${plan.root} (${plural(plan.files, 'file')}, database ${redact(database)})`);
    if (plan.manifestFrom === null) out('manifest job has not checkpointed yet; it starts from item 0');
    else out(`resuming manifest from item ${plan.manifestFrom}`);
    if (plan.orphaned > 0) out(`${plural(plan.orphaned, 'job was', 'jobs were')} left running by a demo that did not stop cleanly (${plan.orphaned === 1 ? 'its lease has' : 'their leases have'} expired); taken over now, the lost attempt counts`);
    if (plan.busy > 0) out(`${plural(plan.busy, 'job of this run is', 'jobs of this run are')} running under a live lease: another demo is working this run now (this one works beside it), or one was killed less than ${DEMO_LEASE_TTL / 1000} s ago (taken over when the lease expires)`);
  } else {
    out(`Demo run ${plan.runId}: ${plural(plan.files, 'file')} under ${plan.root}${plan.skipped ? ` (${plural(plan.skipped, 'entry', 'entries')} skipped: links to directories, sockets, unreadable directories)` : ''}`);
    out(`Enqueued ${plural(plan.files, 'hash job')} and 1 manifest job on queue ${plan.queue} (database ${redact(database)})`);
    for (const d of plan.discarded) out(`--fresh: cancelled ${plural(d.jobs, 'unfinished job')} of the older demo run ${d.runId} over this directory`);
    for (const runId of plan.leftAlone) out(`--fresh: left the older demo run ${runId} alone: another demo is working it now`);
  }
  out(`Manifest job #${plan.manifestJobId}; cancel it from another terminal: npx baton cancel ${plan.manifestJobId}${dbFlag}`);
  out('Ctrl-C stops gracefully (jobs are handed back); run the demo again to resume.');

  let session: DemoSession | undefined;
  let display: ProgressDisplay | undefined;
  // Installed before the worker starts, so an early Ctrl-C is graceful too.
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    onShutdownSignals({
      first: resolve,
      again: (signal, count) => {
        const line = count === 2 ? `${signal}: second signal: skipping the drain, releasing running jobs now` : `${signal}: already releasing running jobs`;
        if (display) display.log(line);
        else out(line);
        void session?.stop({ now: true });
      },
    });
  });

  display = await progressDisplay();
  const files = display.bar('files   ', plan.files);
  const manifest = display.bar('manifest', plan.files);
  const showStatus = (s: DemoStatus) => {
    files.update(s.filesDone, s.files, s.filesFailed ? `${s.filesFailed} failed` : '');
    manifest.update(s.manifest.current, s.manifest.total, s.manifest.state === 'running' || s.manifest.state === 'queued' ? '' : s.manifest.state);
  };
  session = await startDemo(baton, plan, {
    concurrency: flags.concurrency,
    ...(flags.manifestDelay ? { manifestDelayMs: flags.manifestDelay } : {}),
    ...(flags.drainTimeout !== undefined ? { drainTimeout: flags.drainTimeout } : {}),
    onStatus: showStatus,
    onStepReplayed: (step) => display!.log(`manifest step "${step}" replayed from storage (not run again)`),
  });

  let interrupted: NodeJS.Signals | undefined;
  const first = await Promise.race([session.finished.then(() => null), signalled]);
  if (first) {
    interrupted = first;
    display.log(`${first}: stopping; running jobs get ${flags.drainTimeout ?? 1000} ms to finish, the rest are handed back (Ctrl-C again to hurry)`);
  }
  const stopped = await session.stop();
  const summary = await summarize(baton, plan, session);
  showStatus(summary.status);
  display.stop();
  if (interrupted) {
    printInterrupted(plan, summary, stopped.released, resumeCommand(dir, flags));
    return SIGNAL_EXIT[interrupted] ?? 1;
  }
  printSummary(plan, summary);
  return 0;
}

function printSummary(plan: DemoPlan, s: DemoSummary): void {
  const seconds = s.session.ms / 1000;
  const rate = seconds > 0 ? Math.round(s.session.jobs / seconds) : 0;
  const ratio = s.bytes > 0 ? ` (${((s.gzipBytes / s.bytes) * 100).toFixed(1)}%)` : '';
  out('');
  out(`Demo run ${plan.runId} finished`);
  out(`  files     ${plan.files}: ${s.completed} hashed, ${s.failed} failed, ${s.cancelled} cancelled`);
  out(`  bytes     ${bytes(s.bytes)} read (${s.bytes} B), ${bytes(s.gzipBytes)} gzipped${ratio}`);
  out(`  speed     ${plural(s.session.jobs, 'job')} in ${seconds.toFixed(1)} s this session: ${rate} jobs/s`);
  if (s.failed > 0) {
    out(`  failures  ${s.failed}${s.failures.length < s.failed ? `; the first ${s.failures.length}` : ''}:`);
    for (const f of s.failures) out(`    job #${f.jobId} ${printable(f.path)}: ${printable(f.message)}`);
  } else out('  failures  0');
  if (s.manifest.state === 'completed') out(`  manifest  ${plural(s.manifest.entries, 'entry', 'entries')} written to ${s.manifest.file}`);
  else out(`  manifest  job #${s.manifest.jobId} ${s.manifest.state} after ${plural(s.manifest.entries, 'entry', 'entries')}; partial entries in ${s.manifest.jsonl}`);
}

function printInterrupted(plan: DemoPlan, s: DemoSummary, released: number, resume: string): void {
  out('');
  out(`Demo run ${plan.runId} interrupted: ${s.status.filesDone} of ${plural(plan.files, 'file')} done, ${plural(released, 'running job')} handed back (${released === 1 ? 'attempt' : 'attempts'} not counted)`);
  if (s.manifest.state === 'queued') out(`  manifest job #${s.manifest.jobId} released with its checkpoint at item ${s.manifest.itemsDone}`);
  else out(`  manifest job #${s.manifest.jobId} is ${s.manifest.state}`);
  out(`To resume, run: ${resume}`);
}

function resumeCommand(dir: string | undefined, flags: DemoFlags): string {
  const args = [...(dir ? [quote(dir)] : []), ...(flags.database ? ['--database', quote(flags.database)] : []), ...(flags.out !== './baton-demo' ? ['--out', quote(flags.out)] : [])];
  return `npm run demo${args.length ? ` -- ${args.join(' ')}` : ''}`;
}

/** Quotes a shell word when it needs it. */
function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
