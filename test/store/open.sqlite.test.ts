/**
 * Opening the SQLite store on a path that cannot be a database file: a directory is
 * refused by name, for a writer and a reader, and nothing is created in it
 * (better-sqlite3 alone says "unable to open database file" or "disk I/O error").
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { tempDir } from '../helpers/db.js';

describe('SQLite store: a directory as the database', () => {
  it.each([false, true])('readOnly %s: refused with an error naming the directory and a file to give; nothing is created', async (readOnly) => {
    const dir = tempDir();
    await expect(openStore(`sqlite:${dir}`, { readOnly })).rejects.toThrow(`${dir} is a directory, not a database file (give a file in it, e.g. sqlite:${join(dir, 'baton.db')})`);
    expect(readdirSync(dir)).toEqual([]);
  });
});
