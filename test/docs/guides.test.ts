/**
 * The README and every guide under docs/ run their own examples (issue 30, item 12):
 * each ```ts / ```js block not marked `no-run` (test/docs/markdown.ts) is written
 * into a directory of the guide's own, inside the repository so that `baton-jobs`
 * resolves to src/ (the `baton-source` condition) and zod, pg… to its node_modules,
 * and run there with node and tsx, in order; it must exit 0. A block whose first line
 * is a comment naming a file (`// tasks.ts`) is written under that name, so later
 * blocks of the guide import it. The examples wait on events, never on time.
 *
 * Driver: the examples open `sqlite:./baton.db` in their directory, so the sqlite
 * project runs them all; the PostgreSQL guide's read `BATON_DATABASE_URL`, and only
 * the postgres project runs them, on a schema of its own.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NODE_TS_ARGS } from '../helpers/child.js';
import { tempDatabase, testDriver } from '../helpers/db.js';
import { anchorsOf, examplesOf, relativeLinksOf } from './markdown.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** The guides, each with at least one runnable example; the PostgreSQL one runs on PostgreSQL only. */
const GUIDES = [
  'README.md',
  'docs/tasks-and-payloads.md',
  'docs/workers-and-shutdown.md',
  'docs/cancellation.md',
  'docs/schedules-and-services.md',
  'docs/flow-control.md',
  'docs/operations.md',
  'docs/postgres.md',
  'docs/http-and-dashboard.md',
  'docs/observability.md',
  'docs/deploying.md',
  'docs/configuration.md',
];
const POSTGRES_ONLY = new Set(['docs/postgres.md']);

/** Every markdown file of docs/, so that a new guide's examples run too. */
const ALL = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** At most two examples run at once (CI has two cores): each is a process of its own, most of it start-up. */
let freeSlots = 2;
const waiting: Array<() => void> = [];
async function inSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (freeSlots === 0) await new Promise<void>((resolve) => waiting.push(resolve));
  else freeSlots--;
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else freeSlots++;
  }
}

/** A file name given by a first line `// name.ts` (or .js, .mjs), else undefined. */
function namedFile(code: string): string | undefined {
  return /^\/\/ ([\w.-]+\.(?:ts|js|mjs))\s*$/.exec(code.split('\n', 1)[0]!)?.[1];
}

describe('the guides\' examples', () => {
  it('every guide has a runnable example; every markdown file\'s examples are counted', () => {
    const counts = ALL.map((file) => {
      const examples = examplesOf(join(ROOT, file));
      return { file, runnable: examples.filter((e) => !e.noRun).length, noRun: examples.filter((e) => e.noRun).length };
    });
    console.log(counts.map((c) => `${c.file}: ${c.runnable} run, ${c.noRun} marked no-run`).join('\n'));
    expect(GUIDES.filter((guide) => !counts.some((c) => c.file === guide && c.runnable > 0))).toEqual([]);
  });

  it('every relative link of the README and the guides names a file that exists, and a heading of it', () => {
    const broken: string[] = [];
    for (const file of ALL) {
      for (const { line, target } of relativeLinksOf(readFileSync(join(ROOT, file), 'utf8'))) {
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const linked = path === '' ? join(ROOT, file) : join(ROOT, dirname(file), path);
        if (!existsSync(linked)) broken.push(`${file}:${line}: ${target} (no such file)`);
        else if (anchor !== undefined && linked.endsWith('.md') && !anchorsOf(readFileSync(linked, 'utf8')).has(anchor)) broken.push(`${file}:${line}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  const here = ALL.filter((file) => (testDriver === 'postgres') === POSTGRES_ONLY.has(file));
  // Guides side by side, their examples in order, two examples at a time.
  it.concurrent.each(here)('%s', async (file) => {
    const examples = examplesOf(join(ROOT, file)).filter((e) => !e.noRun);
    if (examples.length === 0) return;
    const dir = mkdtempSync(join(ROOT, 'test/docs/.run-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, BATON_LOG_LEVEL: 'warn', BATON_LOG_FORMAT: 'json' };
      delete env.BATON_DATABASE_URL;
      if (POSTGRES_ONLY.has(file)) env.BATON_DATABASE_URL = tempDatabase().url;
      for (const [i, example] of examples.entries()) {
        const name = namedFile(example.code) ?? `example-${i}.${example.language}`;
        writeFileSync(join(dir, name), example.code);
        const where = `${file}:${example.line} (${name})`;
        // A hang fails the example after 60 s instead of holding the test until its timeout.
        const failure = await inSlot(() => run(process.execPath, [...NODE_TS_ARGS, name], { cwd: dir, env, timeout: 60_000 })).then(
          () => '',
          (error: { code?: number | null; signal?: string | null; stdout?: string; stderr?: string }) => `${where} exited ${error.code ?? error.signal}:\n${error.stdout}\n${error.stderr}`,
        );
        expect(failure, where).toBe('');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
