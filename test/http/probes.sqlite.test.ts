/**
 * `/readyz` on SQLite when the database file goes away under a running process: the
 * open connection keeps reading and writing the unlinked (or replaced) file, so
 * without a check of the file at its path the probe stayed 200 while every write went
 * where no other process and no restart would see it.
 */
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Readiness } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { openBaton, tempDatabase } from '../helpers/db.js';

/** The reason /readyz gives: no path (the probe answers without a token). */
const GONE = 'the database file was deleted or replaced after this process opened it: restart the process';

async function readyz(app: ReturnType<typeof createHttpApp>) {
  const response = await app.fetch(new Request('http://localhost/readyz'));
  return { status: response.status, json: (await response.json()) as Readiness };
}

describe('/readyz and the SQLite file', () => {
  it('is 503 naming "database" once the file is deleted', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const app = createHttpApp(baton);
    expect((await readyz(app)).status).toBe(200);
    for (const suffix of ['', '-wal', '-shm']) rmSync(db.path + suffix, { force: true });
    expect(await readyz(app)).toMatchObject({ status: 503, json: { ready: false, failed: ['database'], checks: { database: { ok: false, reason: GONE } } } });
  });

  it('is 503 naming "database" once another file takes its place', async () => {
    const db = tempDatabase();
    const baton = await openBaton({ database: db.url });
    const app = createHttpApp(baton);
    expect((await readyz(app)).status).toBe(200);
    // A restore from a copy: same content, a new file at the path.
    copyFileSync(db.path, `${db.path}.copy`);
    renameSync(`${db.path}.copy`, db.path);
    expect(await readyz(app)).toMatchObject({ status: 503, json: { ready: false, failed: ['database'], checks: { database: { ok: false, reason: GONE } } } });
  });
});
