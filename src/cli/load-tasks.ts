import { stat } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { importPeer } from '../import-peer.js';
import { isTask, tasksFromModule, type AnyTask } from '../job/task.js';
import { isService, type Service } from '../lease/service.js';
import { isSchedule, type Schedule } from '../schedule/schedule.js';
import { isQueue, type Queue } from '../flow/queue.js';
import { CliError, UsageError, firstLine } from './options.js';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts', '.tsx']);
const JAVASCRIPT = new Set(['.js', '.mjs', '.cjs']);

/**
 * Loads the tasks a module exports (named exports made by `defineTask`, or a
 * default array of them). TypeScript files (.ts, .mts, .cts, .tsx) load without a
 * build step through tsx's scoped loader, which does not change how other modules
 * load (tsx is an optional peer dependency, imported only then); .js, .mjs and .cjs
 * files load with a plain `import()`.
 *
 * Every failure is one line naming the file: "cannot load tasks file X: <why>".
 *
 * @param file - path relative to the working directory, or absolute
 * @throws UsageError (exit 2) when the path is missing, a directory, or not a
 *   .js/.ts module; CliError (exit 1, the module's error as `cause`) when the
 *   module does not compile, throws while loading or imports what is missing, or
 *   when a TypeScript file needs tsx and it is not installed;
 *   ConfigError when it exports no task or two tasks share a name
 */
export async function loadTasks(file: string): Promise<AnyTask[]> {
  return tasksFromModule(await importModule(file), file);
}

/** What a worker's module may export: tasks, schedules, services and queues. */
export interface WorkerModule {
  tasks: AnyTask[];
  schedules: Schedule[];
  services: Service[];
  /** Queues it exports (`defineQueue`): stored when the command opens the database, as `createBaton({ queues })`. */
  queues: Queue[];
}

/**
 * Loads a worker's module: its tasks, and the schedules (`defineSchedule`), services
 * (`defineService`) and queues (`defineQueue`) it exports beside them (named exports or
 * members of a default array). Errors as {@link loadTasks}; a module may export no task when it
 * exports a schedule or a service.
 */
export async function loadWorkerModule(file: string): Promise<WorkerModule> {
  const module = await importModule(file);
  const exported = Object.entries(module).flatMap(([name, value]) => (name === 'default' && Array.isArray(value) ? value : [value]));
  const schedules = exported.filter(isSchedule);
  const services = exported.filter(isService);
  const tasks = exported.some(isTask) || (schedules.length === 0 && services.length === 0) ? tasksFromModule(module, file) : [];
  return { tasks, schedules: [...new Set(schedules)], services: [...new Set(services)], queues: [...new Set(exported.filter(isQueue))] };
}

async function importModule(file: string): Promise<Record<string, unknown>> {
  const path = resolve(file);
  const cannot = (why: string) => `cannot load tasks file ${file}: ${why}`;
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') throw new UsageError(cannot('no such file'));
    throw new UsageError(cannot(firstLine(error)));
  });
  if (info.isDirectory()) throw new UsageError(cannot('it is a directory; give the module file (e.g. tasks.ts)'));
  const ext = extname(path);
  if (!info.isFile() || (!TYPESCRIPT.has(ext) && !JAVASCRIPT.has(ext))) {
    throw new UsageError(cannot('not a JavaScript or TypeScript module (.ts, .mts, .cts, .tsx, .js, .mjs or .cjs)'));
  }
  const url = pathToFileURL(path).href;
  let module: Record<string, unknown>;
  try {
    if (TYPESCRIPT.has(ext)) {
      const { tsImport } = await importPeer('tsx', () => import('tsx/esm/api'));
      module = (await tsImport(url, import.meta.url)) as Record<string, unknown>;
    } else {
      module = (await import(url)) as Record<string, unknown>;
    }
  } catch (error) {
    throw new CliError(cannot(firstLine(error)), { cause: error });
  }
  return module;
}
