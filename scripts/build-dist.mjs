// Builds the package's JavaScript into dist/: one ESM file per export (index, tool, routing, node,
// testing, cloudflare, workflows) plus the `flue` CLI (cli.js). This is what an installed package
// runs on Node and what `flue build` bundles into a Worker: users never compile our TypeScript.
// Inside this repository the sources stay the truth: tests and the type checker read src/ through
// the "flue-source" condition, and this runs again whenever src/ is newer (scripts/preflight.mjs).
// Declarations (dist/types/) come from scripts/build-types.mjs, run by `npm pack`.
//
//   node scripts/build-dist.mjs            # build if stale
//   node scripts/build-dist.mjs --force    # always build
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = path.join(root, 'dist');
const stamp = path.join(outdir, '.built');

/** Entry name → source. One build with code splitting, so shared modules exist once: the module-
 * scoped registries of the runtime must be the same instance behind every entry (and the CLI). */
const ENTRIES = {
  index: 'src/runtime/index.ts',
  tool: 'src/runtime/tool-entry.ts',
  routing: 'src/runtime/routing.ts',
  node: 'src/node/index.ts',
  testing: 'src/testing/index.ts',
  cloudflare: 'src/durable-objects/index.ts',
  workflows: 'src/workflows/index.ts',
  'channels/github': 'src/runtime/channels/github.ts',
  otel: 'src/otel/index.ts',
  cli: 'src/build/cli.ts',
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

export async function buildDist() {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: ENTRIES,
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    // The same files run on Node and in workerd (where `flue build` bundles them again): Node
    // built-ins and cloudflare:* stay imports, and only the Node entries import node:*.
    platform: 'node',
    target: 'es2022',
    // Dependencies stay imports: the bundle holds only this package's own code.
    packages: 'external',
    external: ['cloudflare:*'],
    logLevel: 'warning',
    metafile: true,
    // Inside the bundle a self-import must reach the bundled entry, not a second copy.
    alias: Object.fromEntries(
      Object.entries(ENTRIES)
        .filter(([name]) => name !== 'cli')
        .map(([name, source]) => [selfName(name), `./${source}`]),
    ),
  });
  // Chunk names change with their contents; stale ones must not linger into a packed tarball.
  // Removed only after the new files are written, so a process loading dist/ meanwhile still
  // finds every file it imports.
  const written = new Set(Object.keys(result.metafile.outputs).map((file) => path.resolve(root, file)));
  for (const name of readdirSync(outdir)) {
    const file = path.join(outdir, name);
    if ((name.endsWith('.js') || name.endsWith('.js.map')) && !written.has(file)) rmSync(file);
  }
  mkdirSync(outdir, { recursive: true });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

function selfName(entry) {
  return entry === 'index' ? '@flue/runtime' : `@flue/runtime/${entry}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--force') || isStale()) await buildDist();
}
