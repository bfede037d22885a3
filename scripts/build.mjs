/**
 * `npm run build`: the package's dist/. Declarations (.d.ts) come from tsc, module by
 * module, as before; the JavaScript is bundled by esbuild, one file per public entry
 * (each `exports` entry of package.json and the CLI, dist/cli/main.js) and the code
 * they share in dist/chunks/, with zod inlined and tree-shaken (only the parts
 * Baton's schemas use) and every other dependency left to node_modules. A worker
 * then loads a handful of files instead of ~110 modules plus zod's ~100: what this
 * saves at start-up is in docs/benchmarks.md, "Start-up".
 *
 * Usage: node scripts/build.mjs [--outdir DIR]  (default dist; DIR is emptied first)
 * Plain JavaScript so that `npm install`'s prepare step needs only node, tsc and esbuild.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf('--outdir');
const outdir = resolve(root, at >= 0 && args[at + 1] ? args[at + 1] : 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** Packages bundled into dist/ (pure ESM, no files of their own read at run time). */
const INLINED = new Set(['zod']);

const entryPoints = [
  ...Object.values(pkg.exports).flatMap((target) => (typeof target === 'object' && target['baton-source'] ? [target['baton-source']] : [])),
  './src/cli/main.ts',
];

rmSync(outdir, { recursive: true, force: true });

const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const declarations = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--emitDeclarationOnly', '--outDir', outdir], { cwd: root, stdio: 'inherit' });
if (declarations.status !== 0) process.exit(declarations.status ?? 1);

await build({
  absWorkingDir: root,
  entryPoints,
  outbase: 'src',
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  sourcesContent: false, // the maps point at src/, which the package ships
  keepNames: true,
  chunkNames: 'chunks/[name]-[hash]',
  external: [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})].filter((name) => !INLINED.has(name)).flatMap((name) => [name, `${name}/*`]),
  logLevel: 'warning',
});
