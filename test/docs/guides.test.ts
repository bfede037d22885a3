/**
 * The README and every guide under docs/ run their own examples (issue 30, item 12):
 * each ```ts / ```js block not marked `no-run` (test/docs/markdown.ts) is written
 * into a directory of the guide's own, inside the repository so that `baton-jobs`
 * resolves to src/ (the `baton-source` condition) and zod, pg… to its node_modules,
 * and run there with node and tsx, in order; it must exit 0. A block whose first line
 * is a comment naming a file (`// tasks.ts`) is written under that name, so later
 * blocks of the guide import it. The examples wait on events, never on time. The ts
 * examples also type-check (tsc, the repository's options), and every relative link
 * of these files names a file and heading that exist.
 *
 * Driver: the examples open `sqlite:./baton.db` in their directory, so the sqlite
 * project runs them all; the PostgreSQL guide's read `BATON_DATABASE_URL`, and only
 * the postgres project runs them, on a schema of its own.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NODE_TS_ARGS } from '../helpers/child.js';
import { tempDatabase, testDriver } from '../helpers/db.js';
import { anchorsOf, examplesOf, relativeLinksOf, type Example } from './markdown.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** The guides, each with at least one runnable example; the PostgreSQL one runs on PostgreSQL only. */
const GUIDES = [
  'README.md',
  'docs/tasks-and-payloads.md',
  'docs/workers-and-shutdown.md',
  'docs/cancellation.md',
  'docs/durable-execution.md',
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

/**
 * Writes the runnable examples of `file` into `dir`, each under the name its first
 * line gives (`// tasks.ts`, or .js, .mjs) or as example-N.ts / .js.
 * @returns the examples with their file names, in order
 */
function writeExamples(file: string, dir: string): Array<{ name: string; example: Example }> {
  return examplesOf(join(ROOT, file))
    .filter((e) => !e.noRun)
    .map((example, i) => {
      const name = /^\/\/ ([\w.-]+\.(?:ts|js|mjs))\s*$/.exec(example.code.split('\n', 1)[0]!)?.[1] ?? `example-${i}.${example.language}`;
      writeFileSync(join(dir, name), example.code);
      return { name, example };
    });
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

  // Once, on the sqlite project: the types do not depend on the driver.
  it.skipIf(testDriver === 'postgres')('the ts examples type-check against the source, as the repository\'s own code does', async () => {
    const root = mkdtempSync(join(ROOT, 'test/docs/.types-'));
    try {
      for (const file of ALL) {
        const dir = join(root, file.replace(/[/.]/g, '_'));
        mkdirSync(dir);
        writeExamples(file, dir);
      }
      // The repository's compiler options; unused names are allowed (an example shows what a callback receives).
      const compilerOptions = { noEmit: true, rootDir: '../../..', noUnusedLocals: false, noUnusedParameters: false, declaration: false, sourceMap: false };
      writeFileSync(join(root, 'tsconfig.json'), JSON.stringify({ extends: '../../../tsconfig.json', compilerOptions, include: ['**/*.ts'] }));
      const errors = await run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(root, 'tsconfig.json')], { cwd: ROOT }).then(
        () => '',
        (error: { stdout?: string; stderr?: string }) => `${error.stdout}${error.stderr}`,
      );
      expect(errors).toBe('');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  const here = ALL.filter((file) => (testDriver === 'postgres') === POSTGRES_ONLY.has(file));
  // Guides side by side, their examples in order, two examples at a time.
  it.concurrent.each(here)('%s', async (file) => {
    if (!examplesOf(join(ROOT, file)).some((e) => !e.noRun)) return;
    const dir = mkdtempSync(join(ROOT, 'test/docs/.run-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, BATON_LOG_LEVEL: 'warn', BATON_LOG_FORMAT: 'json' };
      delete env.BATON_DATABASE_URL;
      if (POSTGRES_ONLY.has(file)) env.BATON_DATABASE_URL = tempDatabase().url;
      for (const { name, example } of writeExamples(file, dir)) {
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
