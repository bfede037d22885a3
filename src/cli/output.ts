import type { JobStep } from '../client/steps.js';
import { describeWait } from '../workflow/waits.js';
import type { TimelineEntry } from '../job/timeline.js';
import type { Job, JobSummary } from '../job/types.js';
import { jobView } from '../job/view.js';

/**
 * What the CLI prints. Results go to stdout (a table for people, one JSON document
 * with `--json`); errors, hints and logs go to stderr, so `--json` output can be
 * piped into `jq` as is.
 */

/**
 * Characters beyond C0, C1 and DEL that a terminal obeys or that show as nothing: the
 * line and paragraph separators, the bidirectional marks, overrides and isolates (U+202E
 * shows text reversed), and the invisible ones that make two names look alike — zero
 * width space U+200B, word joiner and invisible operators U+2060–U+2064, and U+FEFF
 * (issue 31). The zero-width joiner and non-joiner (U+200C, U+200D) are left alone:
 * emoji sequences and several scripts need them.
 */
const HIDDEN = '\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff';
/**
 * Characters shown escaped: C0 controls (ESC starts `\u001b[2J` and OSC title
 * sequences, CR rewrites a line, LF fakes one), DEL, C1 controls (U+009B is a
 * one-character CSI), lone surrogates, and {@link HIDDEN}.
 */
const CONTROL = new RegExp(`[\\p{Cc}\\p{Cs}${HIDDEN}]`, 'gu');
/** The same, minus LF: for whole lines of output, whose line breaks are ours. */
const CONTROL_BUT_LF = new RegExp(`(?!\\n)[\\p{Cc}\\p{Cs}${HIDDEN}]`, 'gu');
/** What JSON.stringify leaves raw of those: DEL, C1, and {@link HIDDEN}. */
const JSON_RAW = new RegExp(`[\\u007f-\\u009f${HIDDEN}]`, 'g');

const hex = (c: string) => {
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
};

/**
 * Text from a job, a schedule, a service or an error (anything a user or a handler
 * wrote), made safe to print for people: every character in {@link CONTROL} is shown
 * escaped, `\x1b`, `\x0d`, `\x9b`, `\u202e`, so a job cannot clear the operator's
 * screen, retitle the terminal, or fake a line. Everything else, non-ASCII included,
 * is shown as is. Apply it to each value before it goes in a line (`out`/`err` then
 * escape what is left, except line breaks).
 */
export function printable(text: string): string {
  return text.replace(CONTROL, hex);
}

/** `text` with every control character but LF shown escaped (see {@link printable}): for whole lines. */
export function printableLines(text: string): string {
  return text.replace(CONTROL_BUT_LF, hex);
}

/** Writes one line to stdout; control characters other than line breaks are shown escaped (see {@link printable}). */
export function out(line = ''): void {
  process.stdout.write(`${line.replace(CONTROL_BUT_LF, hex)}\n`);
}

/**
 * Lets the CLI outlive the reader of `stream`, its stdout or stderr. When that pipe
 * closes early (`baton jobs | head -1`, `baton worker 2>&1 | head -1`, a consumer
 * that exits), a write fails with EPIPE, which Node reports as an 'error' event of
 * the stream: unhandled, it crashed the process with a stack trace (a worker then
 * left its running jobs to lease expiry). Here EPIPE only ends that output: it and
 * the EPIPE of every later write are ignored (what is written is lost), while the
 * command finishes its work and exits with its own status, 0 on success. Not 141
 * (128 + SIGPIPE, what a shell reports for a process the signal killed): the command
 * was not cut short, and a `set -o pipefail` script piping it into `head` does not
 * fail. A long-running command (worker, serve) keeps running until its signal and
 * then stops as usual: its work is the jobs, not the lines. Any other error of the
 * stream is thrown, as before. main() calls it for stdout and stderr before any
 * command writes.
 */
export function endOutputOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

/** Writes one line to stderr; control characters other than line breaks are shown escaped (see {@link printable}). */
export function err(line: string): void {
  process.stderr.write(`${line.replace(CONTROL_BUT_LF, hex)}\n`);
}

/**
 * JSON text with nothing a terminal obeys: JSON.stringify escapes C0 but leaves
 * DEL, C1 controls, U+2028/U+2029 and bidi controls raw; they are written as
 * `\u009b`-style escapes, which parse back to the same string (the JSON is exact).
 * Lone surrogates are already escaped by JSON.stringify.
 */
export function safeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(JSON_RAW, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Prints `value` as pretty JSON on stdout (Dates become ISO strings), see {@link safeJson}. */
export function printJson(value: unknown): void {
  out(safeJson(value, 2));
}

/** Prints `value` as one line of JSON on stdout (`--json` event streams), see {@link safeJson}. */
export function printJsonLine(value: unknown): void {
  out(safeJson(value));
}

/**
 * Formats rows as a compact left-aligned table with a header line. Every cell is
 * shown {@link printable}: a value cannot break the table or the terminal.
 * @param columns - header → cell getter, in display order
 */
export function table<T>(rows: readonly T[], columns: Record<string, (row: T) => string>): string {
  const headers = Object.keys(columns);
  const cells = rows.map((row) => headers.map((h) => printable(columns[h]!(row))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...cells.map(line)].join('\n');
}

/** "4s", "12m", "3h", "2d": time elapsed since `date`. */
export function age(date: Date | null, now = Date.now()): string {
  if (!date) return '-';
  const s = Math.max(0, Math.round((now - date.getTime()) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** "1.5 kB", "126.4 MB" (decimal units). */
export function bytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The state shown to people: the stored state or its view (`delayed`, `retrying`, `cancelling`). */
export function displayState(job: Pick<Job, 'state' | 'runAt' | 'attempt' | 'cancelRequestedAt'>, now = Date.now()): string {
  return jobView(job, now);
}

/** The progress cell: `current/total message`, or "-". */
export function progressCell(job: Pick<Job, 'progress'>): string {
  const p = job.progress;
  if (!p) return '-';
  const base = p.total === undefined ? String(p.current) : `${p.current}/${p.total}`;
  return p.message ? `${base} ${truncate(p.message, 30)}` : base;
}

/** The jobs table: id, task, queue, state, attempt, progress, age, and the start of the payload. */
export function jobsTable(jobs: readonly JobSummary[], now = Date.now()): string {
  return table(jobs, {
    id: (j) => String(j.id),
    task: (j) => j.task,
    queue: (j) => j.queue,
    state: (j) => displayState(j, now),
    attempt: (j) => `${j.attempt}/${j.maxAttempts}`,
    progress: progressCell,
    age: (j) => age(j.createdAt, now),
    payload: (j) => truncate(j.payloadPreview.text, 40),
  });
}

/** Every field of one job, one per line, then its errors; each value shown {@link printable}. */
export function jobDetail(job: Job, now = Date.now(), timeline: TimelineEntry[] = [], steps: JobStep[] = []): string {
  const time = (d: Date | null) => (d ? `${d.toISOString()} (${age(d, now)} ago)` : '-');
  const json = (v: unknown) => (v === null || v === undefined ? '-' : truncate(JSON.stringify(v), 200));
  const rows: Array<[string, string]> = [
    ['id', String(job.id)],
    ['task', job.task],
    ['queue', job.queue],
    ['state', displayState(job, now)],
    ['priority', String(job.priority)],
    ['attempt', `${job.attempt} of ${job.maxAttempts}`],
    ['run at', job.runAt.toISOString()],
    ['timeout', job.timeoutMs === null ? '-' : `${job.timeoutMs} ms`],
    ['key', job.key ?? '-'],
    ['payload', json(job.payload)],
    ['progress', progressCell(job)],
    ['checkpoint', json(job.checkpoint)],
    ['result', json(job.result)],
    ['created', time(job.createdAt)],
    ['started', time(job.startedAt)],
    ['finished', time(job.finishedAt)],
    ['lease owner', job.leaseOwner ?? '-'],
  ];
  if (job.wait) rows.push(['waits for', describeWait(job.wait)]);
  if (job.parentId !== null) rows.push(['parent', `job ${job.parentId}`]);
  if (job.cancelRequestedAt) rows.push(['cancel asked', `${time(job.cancelRequestedAt)}${job.cancelReason ? `: ${job.cancelReason}` : ''}`]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(width)}  ${printable(v)}`);
  if (job.errors.length > 0) {
    lines.push('', `errors (${job.errors.length}):`);
    for (const e of job.errors) lines.push(`  attempt ${e.attempt} at ${e.time.toISOString()}: ${printable(e.message)}`);
  }
  if (timeline.length > 0) {
    lines.push('', 'timeline:');
    for (const e of timeline) lines.push(`  ${e.at.toISOString()}  ${printable(e.summary)}`);
  }
  if (steps.length > 0) {
    lines.push('', `steps (${steps.length}):`);
    for (const s of steps) lines.push(`  ${stepLine(s)}`);
  }
  return lines.join('\n');
}

/** One step of `baton job`: seq, name, state, attempt, start, duration, tries, result size or error, a receive's deadline. */
export function stepLine(s: JobStep): string {
  const parts = [`${String(s.seq).padStart(3)}. ${printable(s.name)}`, s.state, `attempt ${s.attempt}`, `started ${s.startedAt.toISOString()}`];
  if (s.durationMs !== null) parts.push(`${s.durationMs} ms`);
  if (s.tries > 1) parts.push(`${s.tries} tries`);
  if (s.resultBytes !== null) parts.push(`result ${s.resultBytes} bytes`);
  if (s.until !== null) parts.push(`until ${s.until.toISOString()}`);
  if (s.error !== null) parts.push(`error: ${printable(truncate(s.error, 200))}`);
  return parts.join(' · ');
}

/** "1 job", "2 jobs", "0 entries" (`many` when the plural is not `one` + "s"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Cuts `text` to `max` characters with an ellipsis. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** One bar of a {@link ProgressDisplay}. */
export interface ProgressBar {
  update(value: number, total: number, status?: string): void;
}

/** Progress of long work: bars on a terminal, plain lines otherwise. */
export interface ProgressDisplay {
  bar(label: string, total: number): ProgressBar;
  /** Prints a line above the bars (or as is). */
  log(line: string): void;
  /** Draws the final values and stops redrawing. */
  stop(): void;
}

/**
 * Creates progress output on stdout. On a terminal: cli-progress bars redrawn in
 * place. Otherwise (a pipe, a file, CI): one plain line with every bar's value at
 * most every `lineInterval` ms, and one at the end.
 */
export async function progressDisplay(options: { tty?: boolean; lineInterval?: number } = {}): Promise<ProgressDisplay> {
  const tty = options.tty ?? process.stdout.isTTY === true;
  if (tty) {
    const { default: cliProgress } = await import('cli-progress');
    const multi = new cliProgress.MultiBar(
      {
        stream: process.stdout,
        format: ' {label} [{bar}] {percentage}% | {value}/{total} {status}',
        barCompleteChar: '█',
        barIncompleteChar: '░',
        barsize: 30,
        hideCursor: true,
        clearOnComplete: false,
        stopOnComplete: false,
        autopadding: true,
        fps: 10,
      },
      cliProgress.Presets.shades_classic,
    );
    return {
      bar(label, total) {
        const bar = multi.create(total, 0, { label, status: '' });
        return { update: (value, t, status = '') => (bar.setTotal(t), bar.update(value, { label, status: printable(status) })) };
      },
      log: (line) => multi.log(`${line.replace(CONTROL_BUT_LF, hex)}\n`),
      stop: () => multi.stop(),
    };
  }
  const interval = options.lineInterval ?? 1000;
  const bars: Array<{ label: string; value: number; total: number; status: string }> = [];
  let last = 0;
  let dirty = false;
  let scheduled = false;
  const line = () => bars.map((b) => `${b.label.trim()} ${b.value}/${b.total}${b.status ? ` (${b.status})` : ''}`).join(', ');
  const print = () => {
    last = Date.now();
    dirty = false;
    out(`progress: ${line()}`);
  };
  return {
    bar(label, total) {
      const state = { label, value: 0, total, status: '' };
      bars.push(state);
      return {
        update(value, t, status = '') {
          dirty ||= value !== state.value || t !== state.total || status !== state.status;
          Object.assign(state, { value, total: t, status });
          // Print after the caller updated every bar of this round (same tick).
          if (dirty && !scheduled && Date.now() - last >= interval) {
            scheduled = true;
            queueMicrotask(() => {
              scheduled = false;
              if (dirty) print();
            });
          }
        },
      };
    },
    log: (text) => out(text),
    stop: () => {
      if (dirty) print();
    },
  };
}
