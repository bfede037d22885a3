import { watch, type FSWatcher } from 'node:fs';
import type Database from 'better-sqlite3';

/**
 * Sees other connections' commits two ways: an `fs.watch` (inotify) on the WAL file,
 * which fires within a millisecond of another process's write, and a poll every
 * `intervalMs` as the safety net (network file systems, platforms without events).
 * Either way `PRAGMA data_version` decides whether anything changed, so this
 * connection's own writes wake nobody. Calls `listener` (without a change: anything
 * may have changed) at most once per check.
 * @returns stop(), which ends the poll and the watcher
 */
export function watchChanges(db: Database.Database, { intervalMs, listener }: { intervalMs: number; listener: () => void }): () => void {
  const version = () => db.pragma('data_version', { simple: true }) as number;
  let last = version();
  let scheduled = false;
  const check = () => {
    scheduled = false;
    if (!db.open) return;
    let current: number;
    try {
      current = version();
    } catch {
      return; // busy or closing: the next tick looks again
    }
    if (current !== last) {
      last = current;
      listener();
    }
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  let watcher: FSWatcher | undefined;
  if (!db.memory) {
    try {
      watcher = watch(`${db.name}-wal`, { persistent: false }, () => {
        if (scheduled) return;
        scheduled = true;
        setImmediate(check);
      });
      watcher.on('error', () => watcher?.close()); // the poll goes on alone
    } catch {
      watcher = undefined; // no WAL file to watch (yet): the poll serves
    }
  }
  return () => {
    clearInterval(timer);
    watcher?.close();
  };
}
