import { watch, type FSWatcher } from 'node:fs';
import type Database from 'better-sqlite3';

/**
 * How many times a WAL event that showed no change is looked at again, and the
 * pause before each look (ms). A commit's WAL writes (which fire the event) come
 * before its WAL-index header update in the -shm file (mmap'd: no event), so the
 * check an event triggers sometimes runs in between and sees the old
 * `data_version`; the change then showed up within 1–2 ms. Measured (issue 14) with
 * a writer process committing at 50/s (Poisson) and a watching reader, on a quiet
 * 2-core host: 3–4% of events found no change, and 6–9 commits in 1,000 reached the
 * reader only through the 10 ms poll; with these looks and no poll, 0–1 in 1,000.
 * The looks are bounded because this connection's own commits fire events too and
 * never change its `data_version` (a look costs one ~5 µs read).
 */
const RECHECKS = 4;
const RECHECK_MS = 1;

/**
 * Sees other connections' commits two ways: an `fs.watch` (inotify) on the WAL file,
 * which fires within a millisecond of another process's write, and a poll every
 * `intervalMs` as the safety net (network file systems, platforms without events).
 * Either way `PRAGMA data_version` decides whether anything changed, so this
 * connection's own writes wake nobody. An event that shows no change is looked at
 * again up to {@link RECHECKS} times, {@link RECHECK_MS} ms apart (the commit may
 * not be visible yet). Calls `listener` (without a change: anything may have
 * changed) at most once per check.
 * @param intervalMs - the poll's period, ms
 * @returns stop(), which ends the poll, the watcher and any look still pending
 */
export function watchChanges(db: Database.Database, { intervalMs, listener }: { intervalMs: number; listener: () => void }): () => void {
  const version = () => db.pragma('data_version', { simple: true }) as number;
  let last = version();
  /** Whether anything changed since the last check (calling `listener` if so). */
  const check = (): boolean => {
    if (!db.open) return false;
    let current: number;
    try {
      current = version();
    } catch {
      return false; // busy or closing: the next look or tick tries again
    }
    if (current === last) return false;
    last = current;
    listener();
    return true;
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  let immediate: NodeJS.Immediate | undefined;
  let recheck: NodeJS.Timeout | undefined;
  let rechecksLeft = 0;
  /** The look an event asked for, then the looks again while it shows no change. */
  const look = () => {
    immediate = undefined;
    recheck = undefined;
    if (check() || rechecksLeft === 0 || !db.open) return;
    rechecksLeft--;
    recheck = setTimeout(look, RECHECK_MS);
    recheck.unref();
  };
  let watcher: FSWatcher | undefined;
  if (!db.memory) {
    try {
      watcher = watch(`${db.name}-wal`, { persistent: false }, () => {
        rechecksLeft = RECHECKS;
        if (immediate) return; // events of one turn share one look
        clearTimeout(recheck);
        immediate = setImmediate(look);
      });
      watcher.on('error', () => watcher?.close()); // the poll goes on alone
    } catch {
      watcher = undefined; // no WAL file to watch (yet): the poll serves
    }
  }
  return () => {
    clearInterval(timer);
    clearImmediate(immediate);
    clearTimeout(recheck);
    watcher?.close();
  };
}
