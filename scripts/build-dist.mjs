// Builds the package's JavaScript into dist/: one ESM file per export (index, tool, routing, node,
// testing, cloudflare, workflows) plus the `flue` CLI (cli.js), which is what an installed package
// runs on Node; and dist/modules/, one ESM module per source file behind the exports a Worker
// imports (the "workerd" condition), which is what `flue build` bundles into a Worker. Users never
// compile our TypeScript.
// Inside this repository the sources stay the truth: tests and the type checker read src/ through
// the "flue-source" condition, and this runs again whenever src/ is newer (scripts/preflight.mjs).
// Declarations (dist/types/) come from scripts/build-types.mjs, run by `npm pack`.
//
//   node scripts/build-dist.mjs            # build if stale
//   node scripts/build-dist.mjs --force    # always build
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = path.join(root, 'dist');
const stamp = path.join(outdir, '.built');

/**
 * The entries a Worker imports. `flue build` resolves them with the "workerd" condition to
 * dist/modules/, one module per source file: esbuild drops a whole unused module there (the package
 * has no side effects), where a shared chunk of the Node build would stay whole once any part of
 * it is used. The Worker gets the tree-shaking of the sources, Node keeps its few large files.
 */
export const WORKER_ENTRIES = ['index', 'tool', 'routing', 'cloudflare', 'workflows', 'channels/github', 'otel'];

/**
 * Dependencies the Node build carries inside its own files instead of importing them. Node pays
 * for every module file it loads (resolve, read, compile, link): Hono's 26 files cost a process
 * about 15-20 ms at start against about 3 ms for the same code in one file, and `@flue/runtime`
 * loads it for createChannelRouter() whether the app serves HTTP or not. The routers' Hono is then
 * this package's copy; an app mounting them into its own Hono app works as before (`app.route()`
 * reads the sub-app's routes and error handler, nothing else). dist/modules/ still imports Hono:
 * a Worker is one bundle, where the app and the routers share one copy.
 */
const BUNDLED_ON_NODE = new Set(['hono']);

/** Every dependency but BUNDLED_ON_NODE, and its subpaths, as esbuild externals. */
function externalDependencies() {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const names = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies }).filter((name) => !BUNDLED_ON_NODE.has(name));
  return names.flatMap((name) => [name, `${name}/*`]);
}

/** Entry name → source. The library entries are one build with code splitting, so shared modules
 * exist once: the module-scoped registries of the runtime must be the same instance behind every
 * entry. The CLI is a second build that imports the library's entries as built files. */
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
  // A dist/ from before the per-file Worker modules existed is stale whatever its stamp says.
  if (!existsSync(stamp) || !existsSync(path.join(outdir, 'modules'))) return true;
  const built = statSync(stamp).mtimeMs;
  return newestSource(path.join(root, 'src')) > built || statSync(path.join(root, 'package.json')).mtimeMs > built;
}

export async function buildDist() {
  const esbuild = await import('esbuild');
  const common = {
    absWorkingDir: root,
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    // The same files run on Node and in workerd (where `flue build` bundles them again): Node
    // built-ins and cloudflare:* stay imports, and only the Node entries import node:*.
    platform: 'node',
    target: 'es2022',
    // A cold start compiles every byte it loads: without whitespace and comments the files are
    // about a quarter smaller. Names stay, so stack traces still name our functions.
    minifyWhitespace: true,
    minifySyntax: true,
    // Dependencies stay imports, all but the ones in BUNDLED_ON_NODE.
    external: ['cloudflare:*', ...externalDependencies()],
    logLevel: 'warning',
    metafile: true,
  };
  const libraryEntries = Object.keys(ENTRIES).filter((name) => name !== 'cli');
  const result = await esbuild.build({
    ...common,
    entryPoints: Object.fromEntries(libraryEntries.map((name) => [name, `${ENTRY_NAMESPACE}:${name}`])),
    // Inside the bundle a self-import must reach the bundled entry, not a second copy.
    alias: Object.fromEntries(libraryEntries.map((name) => [selfName(name), `./${ENTRIES[name]}`])),
    plugins: [sharedCore()],
  });
  // The CLI on its own: its lazily loaded commands would otherwise split the runtime's files
  // further. It reaches the runtime only through the built entries, so one process still holds
  // one runtime.
  const cli = await esbuild.build({
    ...common,
    entryPoints: { cli: ENTRIES.cli },
    plugins: [entriesExternal()],
  });
  const outputs = { ...result.metafile.outputs, ...cli.metafile.outputs };
  // Chunk names change with their contents; stale ones must not linger into a packed tarball.
  // Removed only after the new files are written, so a process loading dist/ meanwhile still
  // finds every file it imports.
  const written = new Set(Object.keys(outputs).map((file) => path.resolve(root, file)));
  for (const name of readdirSync(outdir)) {
    const file = path.join(outdir, name);
    if ((name.endsWith('.js') || name.endsWith('.js.map')) && !written.has(file)) rmSync(file);
  }
  await buildModules(esbuild, result.metafile);
  mkdirSync(outdir, { recursive: true });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

const ENTRY_NAMESPACE = 'flue-entry';
const CORE = 'flue-core';

/**
 * The runtime entries a Node process loads together, built as one unit. esbuild splits shared code
 * into one chunk per combination of entries that reach it, and with nine entries a process
 * importing `@flue/runtime` and `@flue/runtime/node` loaded 26 files: Node pays each file's
 * resolve, read, compile and link (about 25 ms in all, measured against the same code in a few
 * files). Every entry also reaches all of NODE_CORE, so that code is one chunk, and the process
 * loads four files.
 */
const NODE_CORE = ['index', 'tool', 'routing', 'node'];

/**
 * Each library entry: its source's exports, plus a reference to NODE_CORE that esbuild keeps. A
 * module of ours loaded by dynamic `import()` (the sandbox shell, compaction's summarization, task
 * runs) gets the same reference: else every core module it also uses would sit in a chunk of its
 * own (reached by the entries and by it, not by the entries alone), and a start would load those
 * chunks beside the core's one.
 */
function sharedCore() {
  const lazyTargets = new Set();
  return {
    name: 'flue-shared-core',
    setup(build) {
      build.onResolve({ filter: /^\./ }, (args) => {
        if (args.kind !== 'dynamic-import') return undefined;
        const file = path.resolve(args.resolveDir, args.path);
        if (file.startsWith(path.join(root, 'src') + path.sep) && file.endsWith('.ts')) lazyTargets.add(file);
        return undefined;
      });
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!lazyTargets.has(args.path)) return undefined;
        const contents = `${readFileSync(args.path, 'utf8')}\nimport * as __flueCore from '${CORE}';\nif (!__flueCore) throw new Error('unreachable');\n`;
        return { contents, loader: 'ts', resolveDir: path.dirname(args.path) };
      });
      build.onResolve({ filter: new RegExp(`^(${ENTRY_NAMESPACE}:|${CORE}$)`) }, (args) => ({ path: args.path, namespace: 'flue-dist' }));
      build.onLoad({ filter: /.*/, namespace: 'flue-dist' }, (args) => {
        const source = (name) => JSON.stringify(path.join(root, ENTRIES[name]));
        if (args.path === CORE) {
          const contents = NODE_CORE.map((name, i) => `export * as core${i} from ${source(name)};`).join('\n');
          return { contents, loader: 'js', resolveDir: root };
        }
        const name = args.path.slice(ENTRY_NAMESPACE.length + 1);
        // A namespace reference esbuild cannot drop: with it, every entry reaches the whole core.
        const contents = `export * from ${source(name)};\nimport * as core from '${CORE}';\nif (!core) throw new Error('unreachable');\n`;
        return { contents, loader: 'js', resolveDir: root };
      });
    },
  };
}

/** The CLI build: the package's entries, by self-import or by their source file, stay the built files. */
function entriesExternal() {
  const bySource = new Map(
    Object.entries(ENTRIES)
      .filter(([name]) => name !== 'cli')
      .map(([name, source]) => [path.join(root, source), `./${name}.js`]),
  );
  return {
    name: 'flue-cli-entries',
    setup(build) {
      build.onResolve({ filter: /^@flue\/runtime(\/.*)?$/ }, (args) => {
        const name = args.path === '@flue/runtime' ? 'index' : args.path.slice('@flue/runtime/'.length);
        if (!(name in ENTRIES)) return undefined;
        return { path: `./${name}.js`, external: true };
      });
      build.onResolve({ filter: /^\./ }, (args) => {
        const target = bySource.get(path.resolve(args.resolveDir, args.path));
        return target === undefined ? undefined : { path: target, external: true };
      });
    },
  };
}

/**
 * dist/modules/: each source file a Worker entry reaches, compiled alone. Every import stays an
 * import: a relative one renamed from .ts to .js, a self-import (`@flue/runtime`) pointed at the
 * entry's module, packages left to the Worker build.
 */
async function buildModules(esbuild, metafile) {
  const modulesDir = path.join(outdir, 'modules');
  const entrySources = new Set(WORKER_ENTRIES.map((name) => path.resolve(root, ENTRIES[name])));
  const sources = new Set();
  // Every input, not only those with bytes in an output: minified, a module of constants is
  // inlined into its importers, yet a per-file module still imports it.
  for (const input of Object.keys(metafile.inputs)) {
    const file = path.resolve(root, input);
    if (file.startsWith(path.join(root, 'src') + path.sep) && file.endsWith('.ts')) sources.add(file);
  }
  const reached = reachable(metafile, entrySources);
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [...sources].filter((file) => reached.has(file)),
    outdir: modulesDir,
    outbase: path.join(root, 'src'),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    logLevel: 'warning',
    metafile: true,
    plugins: [
      {
        name: 'one-module-per-file',
        setup(build) {
          build.onResolve({ filter: /.*/ }, (args) => {
            if (args.kind === 'entry-point') return undefined;
            if (args.path.startsWith('.')) return { path: args.path.replace(/\.ts$/, '.js'), external: true };
            const self = Object.entries(ENTRIES).find(([name]) => name !== 'cli' && selfName(name) === args.path);
            if (self !== undefined) {
              const target = path.join(
                modulesDir,
                path.relative(path.join(root, 'src'), path.resolve(root, self[1])).replace(/\.ts$/, '.js'),
              );
              let relative = path.relative(
                path.dirname(path.join(modulesDir, path.relative(path.join(root, 'src'), args.importer))),
                target,
              );
              if (!relative.startsWith('.')) relative = `./${relative}`;
              return { path: relative.split(path.sep).join('/'), external: true };
            }
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  const written = new Set(Object.keys(result.metafile.outputs).map((file) => path.resolve(root, file)));
  removeStale(modulesDir, written);
}

/** The source files reachable from `entries` through the Node build's import graph. */
function reachable(metafile, entries) {
  const imports = new Map();
  for (const [input, { imports: list }] of Object.entries(metafile.inputs)) {
    imports.set(
      path.resolve(root, input),
      list.filter((i) => !i.external).map((i) => path.resolve(root, i.path)),
    );
  }
  const seen = new Set();
  const stack = [...entries];
  while (stack.length > 0) {
    const file = stack.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    stack.push(...(imports.get(file) ?? []));
  }
  return seen;
}

function removeStale(dir, written) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) removeStale(file, written);
    else if (entry.name.endsWith('.js') && !written.has(file)) rmSync(file);
  }
}

function selfName(entry) {
  return entry === 'index' ? '@flue/runtime' : `@flue/runtime/${entry}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--force') || isStale()) await buildDist();
}
