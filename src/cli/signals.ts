/**
 * SIGTERM/SIGINT handling of the long-running commands (worker, demo): the first
 * signal starts a graceful stop, a later one asks to hurry. Handlers stay
 * installed, so a signal never kills the process mid-write; the command sets the
 * exit code and returns once everything is closed.
 *
 * A repeat within `duplicateMs` of the first signal is ignored: under `npm run`,
 * Ctrl-C reaches the process twice at once (from the terminal, and forwarded by
 * npm), which must not count as a second, impatient signal.
 */
export function onShutdownSignals(
  handlers: { first: (signal: NodeJS.Signals) => void; again: (signal: NodeJS.Signals) => void },
  duplicateMs = 1000,
): () => void {
  let firstAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    const now = performance.now();
    if (firstAt === undefined) {
      firstAt = now;
      handlers.first(signal);
    } else if (now - firstAt >= duplicateMs) handlers.again(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}

/**
 * Called by a long-running command once its worker stopped and the database is
 * closed: should a handler the worker gave up on (it ignored its signal past the
 * grace) still hold a timer, the process leaves after `ms` anyway, with the exit
 * code already set. Nothing is written after the close, so nothing is cut short.
 */
export function exitWhenIdle(ms = 2000): void {
  setTimeout(() => process.exit(), ms).unref();
}
