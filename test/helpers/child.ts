import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

/** Node arguments that run TypeScript from the repo with `baton` resolved to src/. */
export const NODE_TS_ARGS = ['--conditions=baton-source', '--import', 'tsx'];

/** A message a child wrote to stdout (one JSON object per line). */
export type ChildMessage = { type: string; name?: string; jobId?: number; [key: string]: unknown };

/** A child process that reports JSON lines; tests wait on what it reports. */
export class ChildHandle {
  readonly process: ChildProcess;
  readonly messages: ChildMessage[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = '';
  readonly #waiters = new Set<() => void>();

  constructor(child: ChildProcess) {
    this.process = child;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        this.messages.push(JSON.parse(line) as ChildMessage);
      } catch {
        this.messages.push({ type: 'text', text: line });
      }
      for (const wake of this.#waiters) wake();
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => {
      resolve({ code, signal });
      for (const wake of this.#waiters) wake();
    }));
  }

  get pid(): number {
    return this.process.pid!;
  }

  /** Resolves with the first message (seen so far or later) that passes `match`. */
  waitFor(match: (m: ChildMessage) => boolean, what = 'a message', timeoutMs = 90_000): Promise<ChildMessage> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.messages.find(match);
        if (found) {
          done();
          resolve(found);
        } else if (this.process.exitCode !== null || this.process.signalCode !== null) {
          done();
          reject(new Error(`child ${this.pid} exited before ${what}; stderr:\n${this.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what} from child ${this.pid}; stderr:\n${this.stderr}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** Waits for an event line `name` (optionally for one job). */
  waitForEvent(name: string, jobId?: number, timeoutMs?: number): Promise<ChildMessage> {
    return this.waitFor((m) => m.type === 'event' && m.name === name && (jobId === undefined || m.jobId === jobId), `${name} of job ${jobId}`, timeoutMs);
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    this.process.kill(signal);
  }
}

const children = new Set<ChildHandle>();

/** Runs `node <ts file> ...args` from the repo root; killed after the test if still running. */
export function spawnTs(file: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): ChildHandle {
  const child = spawn(process.execPath, [...NODE_TS_ARGS, file, ...args], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const handle = new ChildHandle(child);
  children.add(handle);
  return handle;
}

/** Starts test/fixtures/worker-process.ts and waits until it reports ready. */
export async function spawnWorker(config: { database: string; ledger?: string; worker?: Record<string, unknown> }): Promise<ChildHandle> {
  const handle = spawnTs(fileURLToPath(new URL('../fixtures/worker-process.ts', import.meta.url)), [JSON.stringify(config)]);
  await handle.waitFor((m) => m.type === 'ready', 'ready');
  return handle;
}

afterEach(async () => {
  for (const child of children) {
    if (child.process.exitCode === null && child.process.signalCode === null) {
      child.kill('SIGKILL');
      await child.exited;
    }
  }
  children.clear();
});
