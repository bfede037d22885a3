/**
 * SQLite's change watch (issue 14): another process's commit writes its WAL frames
 * (which fire the inotify event) before it updates the WAL-index header in the -shm
 * file (mmap'd: no event), so the check an event triggers can read the old
 * `data_version`. Before the fix that commit reached the watcher only through the
 * poll (10 ms later by default); now the event is looked at again until the commit
 * shows. The race cannot be produced on demand with two real connections, so the
 * connection here is a stand-in whose `data_version` changes only after the first
 * read that follows a write to its WAL file.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { watchChanges } from '../../src/store/sqlite/notifier.js';
import { tempDir } from '../helpers/db.js';

/** A poll interval no test reaches: only the WAL watch can call the listener. */
const NO_POLL_MS = 60_000;

/**
 * The parts of a better-sqlite3 connection the watch uses. `commitLagging()` stands
 * for a commit whose WAL frames are written and whose header update is not: the next
 * `data_version` read still returns the old version, the reads after it the new one.
 */
function laggingConnection(name: string) {
  let version = 1;
  let lagging = false;
  let reads = 0;
  const db = {
    open: true,
    memory: false,
    name,
    pragma: (source: string) => {
      expect(source).toBe('data_version');
      reads++;
      const seen = version;
      if (lagging) {
        lagging = false;
        version++;
      }
      return seen;
    },
  };
  return {
    db: db as unknown as Database.Database,
    get reads() {
      return reads;
    },
    commitLagging() {
      lagging = true;
      appendFileSync(`${name}-wal`, 'frame');
    },
  };
}

describe('SQLite change watch', () => {
  it('a commit not yet visible when its WAL event is checked still wakes the listener, without the poll', async () => {
    const name = join(tempDir(), 'baton.db');
    writeFileSync(`${name}-wal`, '');
    const connection = laggingConnection(name);
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    let calls = 0;
    const stop = watchChanges(connection.db, {
      intervalMs: NO_POLL_MS,
      listener: () => {
        calls++;
        wake();
      },
    });
    try {
      connection.commitLagging();
      await woken;
      expect(calls).toBe(1);
      // The start's read, the event's read (old version), then at least one more look.
      expect(connection.reads).toBeGreaterThanOrEqual(3);
    } finally {
      stop();
    }
  });
});
