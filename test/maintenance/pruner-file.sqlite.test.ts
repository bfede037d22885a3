/**
 * SQLite: with retention on, the database file stays bounded across fill/prune
 * cycles. A file Baton creates uses incremental auto-vacuum and gives the pages of
 * deleted jobs back after each batch, so it shrinks back after a prune; an older file
 * (created without it) keeps its free pages and reuses them, so it stops growing at
 * its first peak. Prints bytes per job (docs/architecture.md, "Pruner").
 */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { rawQuery } from '../helpers/raw.js';

const JOBS = 5000;
const task = defineTask('t', { handler: async () => null });

/** Runs `cycles` of: enqueue JOBS jobs (a 200-byte payload), finish them all, prune. Returns the file's size after each fill and after each prune, in bytes. */
async function cycles(db: ReturnType<typeof tempDatabase>, count: number) {
  const baton = await openBaton({ database: db.url });
  const worker = baton.worker({ tasks: [task], retention: { completed: 0 } });
  const size = async () => {
    await rawQuery(db, 'PRAGMA wal_checkpoint(TRUNCATE)');
    return statSync(db.path).size;
  };
  const filled: number[] = [];
  const pruned: number[] = [];
  for (let i = 0; i < count; i++) {
    await baton.enqueueMany(Array.from({ length: JOBS }, (_, n) => ({ task: 't', payload: { n, text: 'x'.repeat(200) } })));
    const now = Date.now();
    await rawQuery(db, "UPDATE jobs SET state = 'completed', finished_at = ?, result = '{\"ok\":true}' WHERE state = 'queued'", [now]);
    filled.push(await size());
    expect((await worker.loops.prune(now + 1)).deleted).toBe(JOBS);
    pruned.push(await size());
  }
  return { filled, pruned };
}

describe('SQLite file size under retention', () => {
  it('a file Baton creates (incremental auto-vacuum) shrinks back after each prune and does not grow across cycles', async () => {
    const db = tempDatabase();
    const { filled, pruned } = await cycles(db, 5);
    expect(await rawQuery(db, 'PRAGMA auto_vacuum')).toEqual([{ auto_vacuum: 2 }]);
    const perJob = (filled[0]! - pruned[0]!) / JOBS;
    console.log(`SQLite: ${Math.round(perJob)} bytes per finished job (200-byte payload); file after fill ${filled.join(', ')} B; after prune ${pruned.join(', ')} B`);
    for (let i = 1; i < filled.length; i++) {
      expect(filled[i]!).toBeLessThanOrEqual(filled[0]! * 1.1);
      expect(pruned[i]!).toBeLessThanOrEqual(pruned[0]! * 1.1);
    }
    expect(pruned[0]!).toBeLessThan(filled[0]! / 4);
  });

  it('a file created before (no auto-vacuum) reuses its free pages: it stops growing at its first peak', async () => {
    const db = tempDatabase();
    const raw = new Database(db.path);
    raw.exec('CREATE TABLE app_notes (id INTEGER PRIMARY KEY)'); // not empty: Baton leaves auto_vacuum as it is
    raw.close();
    const { filled, pruned } = await cycles(db, 4);
    expect(await rawQuery(db, 'PRAGMA auto_vacuum')).toEqual([{ auto_vacuum: 0 }]);
    for (let i = 1; i < filled.length; i++) {
      expect(filled[i]!).toBeLessThanOrEqual(filled[0]! * 1.1);
      expect(pruned[i]!).toBeLessThanOrEqual(filled[0]! * 1.1);
    }
  });
});
