import type { EventEmitter } from 'node:events';

/**
 * How close (ms) a repeat of a signal must follow the signal before it to count as
 * the same one. A terminal's Ctrl-C signals the whole process group; when the
 * command runs under `npm run`/`npx` and the shell hands the process to npm
 * directly (bash execs a lone command), npm forwards its own copy too, so the
 * process sees two SIGINTs 0.2–5 ms apart (measured with npm 11). 200 ms is far
 * above that and far below a person pressing Ctrl-C twice on purpose.
 */
export const DUPLICATE_SIGNAL_MS = 200;

/**
 * SIGTERM/SIGINT handling of the long-running commands (worker, demo): the first
 * signal starts a graceful stop, each later one calls `again` (the commands skip
 * the drain and release running jobs at once). Handlers stay installed, so a
 * signal never kills the process mid-write; the command sets the exit code and
 * returns once everything is closed.
 *
 * A repeat within `duplicateMs` of the previous accepted signal is dropped as
 * npm's duplicate (see {@link DUPLICATE_SIGNAL_MS}).
 *
 * @param options.target - where signals are heard @defaultValue process
 * @param options.now - monotonic clock, ms @defaultValue performance.now
 * @returns a function that removes the handlers
 */
export function onShutdownSignals(
  handlers: { first: (signal: NodeJS.Signals) => void; again: (signal: NodeJS.Signals, count: number) => void },
  options: { duplicateMs?: number; target?: Pick<EventEmitter, 'on' | 'off'>; now?: () => number } = {},
): () => void {
  const duplicateMs = options.duplicateMs ?? DUPLICATE_SIGNAL_MS;
  const target = options.target ?? process;
  const now = options.now ?? (() => performance.now());
  let lastAt: number | undefined;
  let count = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    const at = now();
    if (lastAt !== undefined && at - lastAt < duplicateMs) return;
    lastAt = at;
    count++;
    if (count === 1) handlers.first(signal);
    else handlers.again(signal, count);
  };
  target.on('SIGTERM', onSignal);
  target.on('SIGINT', onSignal);
  return () => {
    target.off('SIGTERM', onSignal);
    target.off('SIGINT', onSignal);
  };
}

/**
 * Called by a long-running command once its worker stopped and the database is
 * closed: the process normally exits on its own at once. Should a handler the
 * worker gave up on (it ignored its signal past the grace) still hold a timer or a
 * socket, the process leaves after `ms` anyway, with the exit code already set, and
 * says so on stderr. Nothing is written after the close, so nothing is cut short.
 */
export function exitWhenIdle(ms = 2000): void {
  setTimeout(() => {
    process.stderr.write(`baton: exiting although something still holds the event loop ${ms} ms after everything was closed (a job handler abandoned at shutdown?)\n`);
    process.exit();
  }, ms).unref();
}
