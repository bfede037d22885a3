import { fileURLToPath } from 'node:url';
import { spawnTs, type ChildHandle, type ChildMessage } from './child.js';
import type { Baton, Job, ListOptions } from 'baton-jobs';

/** Runs one client operation in another process (test/fixtures/client-process.ts) and returns its answer. */
export async function inOtherProcess(command: { database: string; op: 'cancel' | 'enqueue' | 'retry' | 'pause' | 'resume' | 'waitForResult'; [key: string]: unknown }): Promise<ChildMessage> {
  const child = spawnTs(fileURLToPath(new URL('../fixtures/client-process.ts', import.meta.url)), [JSON.stringify(command)]);
  return child.waitFor((m) => m.type === 'result' || m.type === 'error', `the answer to ${command.op}`);
}

/**
 * Starts test/fixtures/client-process.ts without waiting for its answer (for
 * barrier-synchronised races: wait for `{ type: 'waiting' }`, then create the file).
 */
export function spawnClient(command: { database: string; op: 'cancel' | 'enqueue' | 'retry' | 'pause' | 'resume' | 'waitForResult'; [key: string]: unknown }): ChildHandle {
  return spawnTs(fileURLToPath(new URL('../fixtures/client-process.ts', import.meta.url)), [JSON.stringify(command)]);
}

/**
 * `baton.listJobs(options)` with each job read whole (`getJob`): for tests that look at
 * payloads, results or errors, which lists carry only as previews.
 */
export async function listFullJobs(baton: Pick<Baton, 'listJobs' | 'getJob'>, options?: ListOptions): Promise<Job[]> {
  return Promise.all((await baton.listJobs(options)).map((job) => baton.getJob(job.id)));
}

/**
 * Every job of the database, each read whole: {@link listFullJobs} page after page (1,000
 * at a time, newest first), for tests that check every job at the end (fleet, soak).
 */
export async function allFullJobs(baton: Pick<Baton, 'listJobs' | 'getJob'>): Promise<Job[]> {
  const jobs: Job[] = [];
  for (let before: number | undefined; ; ) {
    const page = await listFullJobs(baton, { limit: 1000, ...(before === undefined ? {} : { before }) });
    jobs.push(...page);
    if (page.length < 1000) return jobs;
    before = page.at(-1)!.id;
  }
}
