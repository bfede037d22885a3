import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { ChildHandle, NODE_TS_ARGS, spawnTs } from './child.js';

/** The CLI run from source (test/fixtures/cli.ts), no build needed. */
export const CLI_FIXTURE = fileURLToPath(new URL('../fixtures/cli.ts', import.meta.url));
/** The repo root: the working directory of CLI runs. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What one CLI run printed, and how it exited. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `baton <args>` to completion and returns its output and exit code.
 * Logs are silenced unless `BATON_TEST_LOG` is set. `input` (text or bytes) is written to its stdin.
 */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; input?: string | Buffer } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [...NODE_TS_ARGS, CLI_FIXTURE, ...args],
      {
        cwd: options.cwd ?? REPO_ROOT,
        env: { ...process.env, BATON_LOG_LEVEL: process.env.BATON_TEST_LOG ?? 'silent', ...options.env },
        timeout: options.timeoutMs ?? 90_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') return reject(Object.assign(error, { stdout, stderr }));
        resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
    // Stdin: `input` (then closed), or closed at once, so a command reading stdin never waits.
    child.stdin?.end(options.input ?? '');
  });
}

/** Starts `baton <args>` (a worker, a demo) and returns a handle; it is killed after the test if still running. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}): ChildHandle {
  return spawnTs(CLI_FIXTURE, args, { BATON_LOG_LEVEL: process.env.BATON_TEST_LOG ?? 'silent', ...env });
}

/** The text a child printed on stdout so far. */
export function stdoutOf(child: ChildHandle): string {
  return child.messages.map((m) => (m.type === 'text' && typeof m.text === 'string' ? m.text : JSON.stringify(m))).join('\n');
}

const terminals = new Set<ChildHandle>();

/** `text` quoted for /bin/sh. */
const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * Starts `baton <args>` in a pseudo-terminal, as a person runs it in a terminal:
 * util-linux `script` gives it a TTY for stdin, stdout and stderr, and what it
 * writes to either comes back merged, one entry of `messages` per line (CR removed;
 * colours kept). Its stdin stays open until the test ends. Killed after the test if
 * still running (the CLI then gets SIGHUP).
 */
export function spawnCliInTerminal(args: string[], env: NodeJS.ProcessEnv = {}): ChildHandle {
  const command = [process.execPath, ...NODE_TS_ARGS, CLI_FIXTURE, ...args].map(shellQuote).join(' ');
  const child = spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
    cwd: REPO_ROOT,
    env: { ...process.env, BATON_LOG_LEVEL: process.env.BATON_TEST_LOG ?? 'silent', TERM: 'xterm-256color', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const handle = new ChildHandle(child);
  terminals.add(handle);
  return handle;
}

afterEach(async () => {
  for (const terminal of terminals) {
    if (terminal.process.exitCode === null && terminal.process.signalCode === null) {
      terminal.kill('SIGKILL');
      await terminal.exited;
    }
    terminal.process.stdin?.destroy();
  }
  terminals.clear();
});
