import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The repository root (children run from there so `baton` resolves to src/). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Node arguments that run TypeScript from the repo with `baton` resolved to src/. */
export const NODE_TS_ARGS = ['--conditions=baton-source', '--import', 'tsx'];

/**
 * Node arguments that run a TypeScript fixture with `baton-jobs` resolved to its build
 * (dist/, what an installed package loads): tsx compiles the fixture's own files only.
 * bench:compare runs Baton so, as each peer runs from its published JavaScript.
 */
export const NODE_TS_BUILT_ARGS = ['--import', 'tsx'];

/** One JSON line a child wrote on stdout. */
export type Report = { type: string; [key: string]: unknown };

/**
 * A benchmark child process: JSON lines in on stdin (commands), JSON lines out
 * on stdout (reports). Fixtures exit when their stdin closes, so a runner that
 * dies never leaves them behind.
 */
export class Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly reports: Report[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = '';
  readonly #waiters = new Set<() => void>();

  constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.process = child;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        this.reports.push(JSON.parse(line) as Report);
      } catch {
        this.reports.push({ type: 'text', text: line });
      }
      for (const wake of this.#waiters) wake();
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      // Keep the tail only: a chatty child must not grow the runner's memory.
      this.stderr = (this.stderr + chunk).slice(-20_000);
    });
    child.stdin!.on('error', () => undefined); // the child may be gone when we write
    this.exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => {
        resolve({ code, signal });
        for (const wake of this.#waiters) wake();
      }),
    );
  }

  get pid(): number {
    return this.process.pid!;
  }

  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /** Sends one command line. */
  send(command: object): void {
    if (this.running && this.process.stdin!.writable) this.process.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  /**
   * Resolves with the first report (already received or later) that passes `match`;
   * rejects when the child exits first or after `timeoutMs` (a safety net against
   * hangs, not a measurement).
   */
  waitFor(match: (r: Report) => boolean, what: string, timeoutMs = 60_000): Promise<Report> {
    return this.until(() => this.reports.find(match), what, timeoutMs);
  }

  /** Waits for a report of `type` (optionally also matching `match`). */
  waitForType(type: string, match: (r: Report) => boolean = () => true, timeoutMs?: number): Promise<Report> {
    return this.waitFor((r) => r.type === type && match(r), `a "${type}" report`, timeoutMs);
  }

  /** Waits until `count` reports of `type` were received; returns them. */
  waitForCount(type: string, count: number, timeoutMs?: number): Promise<Report[]> {
    return this.until(() => {
      const found = this.all(type);
      return found.length >= count ? found : undefined;
    }, `${count} "${type}" reports`, timeoutMs);
  }

  /** Re-evaluates `probe` on every report until it returns a value. */
  until<T>(probe: () => T | undefined, what: string, timeoutMs = 60_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = probe();
        if (found !== undefined) {
          done();
          resolve(found);
        } else if (!this.running) {
          done();
          reject(new Error(`${this.name} (pid ${this.pid}) exited before ${what}; stderr:\n${this.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} from ${this.name} (pid ${this.pid}); stderr:\n${this.stderr}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** Reports of `type` received so far. */
  all(type: string): Report[] {
    return this.reports.filter((r) => r.type === type);
  }

  /** Asks the child to exit (closes its stdin) and waits; SIGKILL after `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.process.stdin!.end();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.exited.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) await this.kill();
  }

  /** SIGKILLs the child (when still running) and waits for its exit. */
  async kill(): Promise<void> {
    if (this.running) this.process.kill('SIGKILL');
    await this.exited;
  }
}

const live = new Set<Child>();

/**
 * Starts `node <NODE_TS_ARGS> [nodeArgs] bench/fixtures/<fixture> <JSON config>` from
 * the repo root (with `built`, {@link NODE_TS_BUILT_ARGS}: Baton from dist/, which must
 * be current). Every child is tracked so {@link killAllChildren} can end it.
 */
export function spawnFixture(fixture: string, config: object, options: { name?: string; nodeArgs?: string[]; built?: boolean } = {}): Child {
  const file = fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url));
  return spawnNode([...(options.built ? NODE_TS_BUILT_ARGS : NODE_TS_ARGS), ...(options.nodeArgs ?? []), file, JSON.stringify(config)], options.name ?? fixture);
}

/** Starts `node [nodeArgs] <file> <JSON config>` for a plain JavaScript file (a bundled fixture). */
export function spawnScript(file: string, config: object, options: { name?: string; nodeArgs?: string[] } = {}): Child {
  return spawnNode([...(options.nodeArgs ?? []), file, JSON.stringify(config)], options.name ?? file);
}

function spawnNode(args: string[], name: string): Child {
  const proc = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const child = new Child(name, proc);
  live.add(child);
  void child.exited.then(() => live.delete(child));
  return child;
}

/** SIGKILLs every child still running and waits for them (cleanup after a workload). */
export async function killAllChildren(): Promise<void> {
  await Promise.all([...live].map((child) => child.kill()));
}

/** Synchronous last resort for process exit handlers: SIGKILL whatever is left. */
export function killAllChildrenNow(): void {
  for (const child of live) if (child.running) child.process.kill('SIGKILL');
}
