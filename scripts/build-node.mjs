// Builds the Node entry points of @flue/runtime into plain JavaScript under dist/node/, which the
// package's "node" export condition points at. Node then loads a few bundled files instead of
// type-stripping and resolving about ninety .ts sources at every start (the cold-start figure in
// bench/). The sources stay the truth: tests, the type checker and Worker builds read src/
// through the "flue-source" and "types" conditions, and this runs again whenever src/ is newer.
//
//   node scripts/build-node.mjs            # build if stale
//   node scripts/build-node.mjs --force    # always build
import { mkdirSync, readdirSync, statSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = path.join(root, 'dist', 'node');
const stamp = path.join(outdir, '.built');

/** Entry name → source, one per Node-facing export; splitting keeps one copy of shared modules. */
const ENTRIES = {
  index: 'src/runtime/index.ts',
  tool: 'src/runtime/tool-entry.ts',
  routing: 'src/runtime/routing.ts',
  node: 'src/node/index.ts',
  testing: 'src/testing/index.ts',
  otel: 'src/otel/index.ts',
};

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(file));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(file).mtimeMs);
  }
  return newest;
}

export function isStale() {
  if (!existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  return newestSource(path.join(root, 'src')) > built || statSync(path.join(root, 'package.json')).mtimeMs > built;
}

export async function buildNode() {
  const esbuild = await import('esbuild');
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ENTRIES,
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // Dependencies stay imports: the bundle holds only this package's own code.
    packages: 'external',
    sourcemap: 'linked',
    logLevel: 'warning',
    // Inside the bundle a self-import must reach the bundled copy, not a second one.
    alias: Object.fromEntries(Object.entries(ENTRIES).map(([name, source]) => [selfName(name), `./${source}`])),
  });
  mkdirSync(outdir, { recursive: true });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

function selfName(entry) {
  return entry === 'index' ? '@flue/runtime' : `@flue/runtime/${entry}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--force') || isStale()) await buildNode();
}
