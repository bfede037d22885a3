/**
 * The SQLite driver's write transaction (src/store/sqlite/transaction.ts), on real
 * database files: BEGIN IMMEDIATE takes the write lock up front, a return commits, a
 * throw rolls back, and a nested call joins the outer transaction (no savepoint), so a
 * throw anywhere inside rolls back everything the outer one wrote.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { flatTransaction } from '../../src/store/sqlite/transaction.js';
import { tempDir } from '../helpers/db.js';

const open: Database.Database[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

/** A connection to `file` in WAL mode with a statement cache, as the store opens one. */
function connect(file: string) {
  const db = new Database(file, { timeout: 0 });
  open.push(db);
  db.pragma('journal_mode = WAL');
  const statements = new Map<string, Database.Statement>();
  const sql = (text: string) => statements.get(text) ?? statements.set(text, db.prepare(text)).get(text)!;
  return { db, sql, transaction: <T>(fn: () => T) => flatTransaction(db, sql, fn) };
}

function setup() {
  const file = join(tempDir(), 'transaction.db');
  const a = connect(file);
  a.db.exec('CREATE TABLE t (v INTEGER)');
  return { file, a, values: () => (a.db.prepare('SELECT v FROM t ORDER BY v').pluck().all() as number[]) };
}

describe('SQLite write transaction', () => {
  it('commits what fn wrote when it returns, and returns its value', () => {
    const { file, a } = setup();
    expect(a.transaction(() => a.sql('INSERT INTO t VALUES (1)').run().changes)).toBe(1);
    expect(a.db.inTransaction).toBe(false);
    // Another connection reads the commit.
    expect(connect(file).db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(1);
  });

  it('rolls back what fn wrote when it throws, and rethrows', () => {
    const { a, values } = setup();
    a.sql('INSERT INTO t VALUES (1)').run();
    expect(() => a.transaction(() => {
      a.sql('INSERT INTO t VALUES (2)').run();
      throw new Error('boom');
    })).toThrow('boom');
    expect(a.db.inTransaction).toBe(false);
    expect(values()).toEqual([1]);
  });

  it('joins the outer transaction when nested: an inner throw rolls back the outer writes too', () => {
    const { a, values } = setup();
    expect(() => a.transaction(() => {
      a.sql('INSERT INTO t VALUES (1)').run();
      a.transaction(() => {
        a.sql('INSERT INTO t VALUES (2)').run();
        throw new Error('inner');
      });
    })).toThrow('inner');
    expect(values()).toEqual([]);
    // A nested call that returns commits with the outer one, not before.
    a.transaction(() => {
      a.transaction(() => a.sql('INSERT INTO t VALUES (3)').run());
      expect(a.db.inTransaction).toBe(true);
    });
    expect(values()).toEqual([3]);
  });

  it('holds the write lock from its start: another connection cannot write until it ends', () => {
    const { file, a, values } = setup();
    const b = connect(file);
    a.transaction(() => {
      // No statement of a has written yet: BEGIN IMMEDIATE alone took the lock.
      expect(() => b.transaction(() => b.sql('INSERT INTO t VALUES (9)').run())).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
      expect(b.db.inTransaction).toBe(false);
    });
    b.transaction(() => b.sql('INSERT INTO t VALUES (9)').run());
    expect(values()).toEqual([9]);
  });
});
