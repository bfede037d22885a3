/**
 * The two tasks of `baton demo`:
 * - `demo:hash` — one job per file: streams the file once through SHA-256 and
 *   gzip (node:crypto, node:zlib) and returns its size, digest and gzip size. A file
 *   that cannot be read (gone, permission denied, a dangling link) fails at once
 *   with NonRetryableError; other I/O errors are retried.
 * - `demo:manifest` — one long job per run, in steps (`ctx.step`: "list hash jobs",
 *   then the collection, then "write manifest"): collects the hash jobs' outcomes, in
 *   file order, into a manifest. It walks them with `ctx.forEach`, which records the
 *   items done in the checkpoint every batch; after a release (Ctrl-C), a crash or
 *   a retry it skips them and goes on from there. Entries are appended to a JSONL
 *   file as they come; at the start of each attempt that file is rewritten without
 *   a torn last line or duplicate entries, so a SIGKILL mid-batch never duplicates
 *   an entry. When every entry is in, it writes `manifest-<run>.json`.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, rename, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import * as z from 'zod';
import type { Baton } from '../baton.js';
import { sleep } from '../clock.js';
import { NonRetryableError } from '../errors.js';
import { defineTask } from '../job/task.js';
import { TERMINAL_STATES, type Job, type Json } from '../job/types.js';

export const HASH_TASK = 'demo:hash';
export const MANIFEST_TASK = 'demo:manifest';

/** Errors that mean "this file cannot be read", not "try again". */
const UNREADABLE = new Set(['ENOENT', 'EACCES', 'EPERM', 'EISDIR', 'ELOOP', 'ENOTDIR', 'ENAMETOOLONG', 'ENXIO']);

const hashPayload = z.object({ root: z.string().min(1), path: z.string().min(1) });
export type HashPayload = z.infer<typeof hashPayload>;
export interface HashResult {
  path: string;
  bytes: number;
  sha256: string;
  gzipBytes: number;
}

const manifestPayload = z.object({
  runId: z.string().min(1),
  root: z.string().min(1),
  queue: z.string().min(1),
  /** Entries as they come, one JSON line each. */
  jsonl: z.string().min(1),
  /** The final manifest. */
  manifest: z.string().min(1),
});
export type ManifestPayload = z.infer<typeof manifestPayload>;
export interface ManifestResult {
  file: string;
  entries: number;
  failed: number;
  bytes: number;
}

/** One line of the manifest: a file and what its hash job found. */
export interface ManifestEntry {
  /** Position in the run's file order. */
  i: number;
  jobId: number;
  path: string;
  state: string;
  bytes?: number;
  sha256?: string;
  gzipBytes?: number;
  error?: string;
}

/** Items the manifest job records per checkpoint. */
export const MANIFEST_BATCH = 50;

/** How often the manifest job looks at a hash job that has not finished yet (ms). */
const WAIT_POLL_MS = 100;

export interface DemoTaskOptions {
  /** Reads the run's hash jobs (the manifest collects their results). */
  client: Pick<Baton, 'getJob' | 'listJobs'>;
  /** Files the manifest job waits on at once. @defaultValue 4 */
  manifestConcurrency?: number;
  /** Extra time per manifest entry, in ms: lets tests interrupt a small run mid-manifest. @defaultValue 0 */
  manifestDelayMs?: number;
}

/** Creates the demo's two tasks, bound to a client that can read jobs. */
export function createDemoTasks(options: DemoTaskOptions) {
  const hash = defineTask(HASH_TASK, {
    schema: hashPayload,
    maxAttempts: 3,
    handler: (payload: HashPayload, ctx) => hashFile(payload, ctx.signal),
  });

  const manifest = defineTask(MANIFEST_TASK, {
    schema: manifestPayload,
    maxAttempts: 3,
    handler: async (payload: ManifestPayload, ctx): Promise<ManifestResult> => {
      // Steps (ctx.step): stored with their result, so a resumed run reads them back instead of running them again.
      // The ids as runs of consecutive ids ([first, last] pairs): a few bytes per run, whatever the file count.
      const ids = expandRuns(await ctx.step('list hash jobs', async () => toRuns(await hashJobIds(options.client, payload.queue))));
      await mkdir(dirname(payload.jsonl), { recursive: true });
      const have = await compactEntries(payload.jsonl);
      let written = have.size;
      ctx.progress(written, ids.length, 'collecting hashes');
      const file = await open(payload.jsonl, 'a');
      try {
        await ctx.forEach(
          ids,
          async (id, { index, signal }) => {
            if (have.has(index)) return; // written by an attempt that stopped before its checkpoint
            const job = await waitUntilFinished(options.client, id, signal);
            if (options.manifestDelayMs) await sleep(options.manifestDelayMs, signal);
            const entry = toEntry(index, job);
            await file.write(`${JSON.stringify(entry)}\n`);
            have.add(index);
            ctx.progress(++written, ids.length, 'collecting hashes');
          },
          // Its own count (`written`) includes the items in the file but not yet in the checkpoint.
          { concurrency: options.manifestConcurrency ?? 4, checkpointEvery: MANIFEST_BATCH, progress: false },
        );
      } finally {
        await file.close();
      }
      return ctx.step('write manifest', () => writeManifest(payload, ids.length));
    },
  });

  return { hash, manifest, all: [hash, manifest] };
}

/** Streams one file through SHA-256 and gzip. */
export async function hashFile({ root, path }: HashPayload, signal: AbortSignal): Promise<HashResult> {
  const digest = createHash('sha256');
  let bytes = 0;
  let gzipBytes = 0;
  try {
    await pipeline(
      createReadStream(join(root, path)),
      async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          digest.update(chunk);
          bytes += chunk.length;
          yield chunk;
        }
      },
      createGzip(),
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          gzipBytes += chunk.length;
          callback();
        },
      }),
      { signal },
    );
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    const code = (error as NodeJS.ErrnoException).code;
    if (code && UNREADABLE.has(code)) throw new NonRetryableError(`cannot read ${path}: ${(error as Error).message}`, { cause: error });
    throw error;
  }
  return { path, bytes, sha256: digest.digest('hex'), gzipBytes };
}

/** Ascending ids as runs of consecutive ids: `[first, last]` pairs. */
function toRuns(ids: number[]): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  for (const id of ids) {
    const last = runs.at(-1);
    if (last && last[1] === id - 1) last[1] = id;
    else runs.push([id, id]);
  }
  return runs;
}

/** The ids of {@link toRuns}' runs, ascending. */
function expandRuns(runs: Array<[number, number]>): number[] {
  return runs.flatMap(([first, last]) => Array.from({ length: last - first + 1 }, (_, i) => first + i));
}

/** Ids of a run's hash jobs, ascending: the same list on every attempt. */
async function hashJobIds(client: DemoTaskOptions['client'], queue: string): Promise<number[]> {
  const ids: number[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await client.listJobs({ queue, task: HASH_TASK, limit: 1000, ...(before === undefined ? {} : { before }) });
    ids.push(...page.map((j) => j.id));
    if (page.length < 1000) break;
    before = page.at(-1)!.id;
  }
  return ids.reverse();
}

async function waitUntilFinished(client: DemoTaskOptions['client'], id: number, signal: AbortSignal): Promise<Job> {
  for (;;) {
    const job = await client.getJob(id);
    if (TERMINAL_STATES.includes(job.state)) return job;
    await sleep(WAIT_POLL_MS, signal);
  }
}

function toEntry(i: number, job: Job): ManifestEntry {
  const path = (job.payload as { path?: string } | null)?.path ?? '?';
  const entry: ManifestEntry = { i, jobId: job.id, path, state: job.state };
  if (job.state === 'completed') {
    const r = job.result as unknown as HashResult;
    entry.bytes = r.bytes;
    entry.sha256 = r.sha256;
    entry.gzipBytes = r.gzipBytes;
  } else if (job.errors.length > 0) {
    entry.error = job.errors.at(-1)!.message;
  } else if (job.cancelReason) {
    entry.error = `cancelled: ${job.cancelReason}`;
  }
  return entry;
}

/**
 * Reads the JSONL written so far and rewrites it with one line per item: a torn
 * last line (killed mid-write) and repeated items are dropped.
 * @returns the item indices it holds
 */
async function compactEntries(path: string): Promise<Set<number>> {
  const entries = await readEntries(path);
  await writeFile(path, entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
  return new Set(entries.map((e) => e.i));
}

/** The entries of a JSONL file, one per item, in item order; [] when there is no file. */
export async function readEntries(path: string): Promise<ManifestEntry[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const byItem = new Map<number, ManifestEntry>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const entry = JSON.parse(line) as ManifestEntry;
      if (Number.isInteger(entry.i) && !byItem.has(entry.i)) byItem.set(entry.i, entry);
    } catch {
      // a torn line: its item is not in the checkpoint either, so it runs again
    }
  }
  return [...byItem.values()].sort((a, b) => a.i - b.i);
}

async function writeManifest(payload: ManifestPayload, expected: number): Promise<ManifestResult> {
  const entries = await readEntries(payload.jsonl);
  if (entries.length !== expected) throw new Error(`manifest has ${entries.length} entries, expected ${expected}`);
  const failed = entries.filter((e) => e.state !== 'completed').length;
  const bytes = entries.reduce((n, e) => n + (e.bytes ?? 0), 0);
  const document: Json = {
    run: payload.runId,
    root: payload.root,
    writtenAt: new Date().toISOString(),
    files: entries.length,
    failed,
    bytes,
    gzipBytes: entries.reduce((n, e) => n + (e.gzipBytes ?? 0), 0),
    entries: entries as unknown as Json,
  };
  const temp = `${payload.manifest}.tmp`;
  await writeFile(temp, `${JSON.stringify(document, null, 2)}\n`);
  await rename(temp, payload.manifest);
  return { file: payload.manifest, entries: entries.length, failed, bytes };
}

/** Items the manifest job recorded done in its checkpoint (ctx.forEach's record). */
export function manifestItemsDone(checkpoint: Json): number {
  const record = (checkpoint as { forEach?: { done?: number[][] } } | null)?.forEach?.done ?? [];
  return record.reduce((n, [from, to]) => n + (to! - from! + 1), 0);
}
