import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * The folder of this package's package.json (`baton-jobs`), found by walking up from
 * this module: the same answer from src/ (tsx, tests), from dist/ and from a chunk
 * of the bundled build (dist/chunks/), wherever the bundler put the caller's code.
 * Cached after the first call.
 * @returns an absolute path
 * @throws Error when no package.json named baton-jobs is above this module
 */
export function packageRoot(): string {
  if (root !== undefined) return root;
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'baton-jobs') return (root = dir);
    if (dirname(dir) === dir) throw new Error(`baton: package.json of baton-jobs not found above ${start}`);
  }
}
