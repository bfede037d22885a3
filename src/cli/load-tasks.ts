import { existsSync, statSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tasksFromModule, type AnyTask } from '../job/task.js';
import { UsageError } from './options.js';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts', '.tsx']);

/**
 * Loads the tasks a module exports (named exports made by `defineTask`, or a
 * default array of them). TypeScript files (.ts, .mts, .cts) load without a build
 * step through tsx's scoped loader, which does not change how other modules load;
 * .js and .mjs files load with a plain `import()`.
 *
 * @param file - path relative to the working directory, or absolute
 * @throws UsageError when the file does not exist; ConfigError when it exports no task
 *   or two tasks share a name; whatever the module throws while loading
 */
export async function loadTasks(file: string): Promise<AnyTask[]> {
  const path = resolve(file);
  if (!existsSync(path) || !statSync(path).isFile()) throw new UsageError(`tasks file ${file} does not exist`);
  const url = pathToFileURL(path).href;
  let module: Record<string, unknown>;
  if (TYPESCRIPT.has(extname(path))) {
    const { tsImport } = await import('tsx/esm/api');
    module = (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  } else {
    module = (await import(url)) as Record<string, unknown>;
  }
  return tasksFromModule(module, file);
}
