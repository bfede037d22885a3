import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import { createBaton, type Baton, type BatonOptions } from 'baton';

/** A temp directory removed after the current test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-test-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh SQLite database file for one test: `{ url, path, dir }`. */
export function tempDatabase(): { url: string; path: string; dir: string } {
  const dir = tempDir();
  const path = join(dir, 'baton.db');
  return { url: `sqlite:${path}`, path, dir };
}

/** A silent logger (set BATON_TEST_LOG=debug to see logs). */
export const testLogger = () => pino({ level: process.env.BATON_TEST_LOG ?? 'silent' });

/**
 * Opens a Baton on `url` (default: a fresh temp database) that is closed after the
 * test; every worker it made is stopped first. `observer` sees every store call
 * (op name, duration, error), e.g. to assert that no write happened.
 */
export async function openBaton(options: BatonOptions = {}, observer?: StoreObserver): Promise<Baton> {
  const baton = await createBaton({ database: options.database ?? tempDatabase().url, logger: testLogger(), ...options }, observer);
  cleanups.push(() => baton.close());
  return baton;
}

/** `createBaton`'s second argument: called after every store operation. */
export type StoreObserver = NonNullable<Parameters<typeof createBaton>[1]>;

const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
