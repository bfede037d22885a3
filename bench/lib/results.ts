import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';

/**
 * Writes a run's results as `<dir>/<stamp>.json`: `fields` plus when and where it ran
 * (time, Node version, CPU count and model, load average before and after).
 * @returns the file's path
 */
export function writeResults(dir: string, stamp: string, run: { seconds: number; loadAverage: { before: number; after: number } }, fields: object): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${stamp}.json`);
  const header = { at: new Date().toISOString(), node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, ...run };
  writeFileSync(file, `${JSON.stringify({ ...header, ...fields }, null, 2)}\n`);
  return file;
}
