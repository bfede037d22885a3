import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from './child.js';

/**
 * Bundles a fixture and the baton sources it imports into one plain ESM file, so
 * it runs with `node file.mjs` without the tsx loader (whose esbuild service adds
 * tens of MB of RSS that a deployed worker does not pay). Packages from
 * node_modules stay external; the file is written under bench/results (gitignored,
 * inside the repo so they resolve). Uses esbuild, which tsx depends on.
 * @returns the bundle's path and a function removing it
 */
export async function bundleFixture(fixture: string): Promise<{ file: string; remove: () => void }> {
  const { build } = await import('esbuild');
  const results = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(results, { recursive: true });
  const dir = mkdtempSync(join(results, '.bundle-'));
  const file = join(dir, fixture.replace(/\.ts$/, '.mjs'));
  await build({
    entryPoints: [fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url))],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    alias: { 'baton-jobs': join(REPO_ROOT, 'src', 'index.ts') },
    logLevel: 'silent',
  });
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
