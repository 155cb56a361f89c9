// The import rules of src/ (part of `npm test`). Layers:
//
// - src/shared: what the build and the runtime both need (identity pattern, skill format, value
//   helpers). Imports nothing else from src/.
// - src/runtime: the engine and the authoring API. Never imports a host, the build, the adapters or
//   test code. Inside it, rooms (subfolders, each with a README.md saying what it owns) import only
//   the rooms listed for them in ROOMS below; the entry files at its top (index.ts, routing.ts,
//   tool-entry.ts) may import every room, and no room imports an entry file.
// - src/node, src/durable-objects: the hosts. Run the engine; never import the build or test code.
// - src/workflows, src/otel: adapters over the runtime; never the build or test code.
// - src/build: the CLI and the bundler, on Node. From the engine side it imports only src/shared;
//   `flue run` (cli-run.ts) loads the runtime at run time through the package's public entry points.
// - src/testing: scripted models and crash harnesses (also behind `flue dev --scripted`).
//
// No import cycle anywhere in src/ (type-only imports included). Only the build imports `yaml`, so
// Worker bundles stay small. Test files and their fixtures are not product code and are skipped.
//
// Imports are read from esbuild's TypeScript output (value imports, dynamic imports) parsed with
// acorn, plus `import type` / `export type` statements read from the source.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';
import { parse } from 'acorn';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SKIP = /(\.test\.ts|\.fixtures\.ts|\.d\.ts)$/;
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

/** Every product source file under src/, relative to the root with `/` separators. */
function sources(dir = 'src') {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sources(rel);
    return /\.(ts|mts|js|mjs)$/.test(entry.name) && !SKIP.test(entry.name) ? [rel] : [];
  });
}

/** A specifier as a src/ file, `pkg:<name>` for packages and builtins. */
function resolve(from, specifier) {
  if (specifier.startsWith('.')) {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
    return existsSync(path.join(root, target)) ? target : `missing:${target}`;
  }
  const self = /^@flue\/runtime(\/.*)?$/.exec(specifier);
  if (self) {
    const entry = pkg.exports[`.${self[1] ?? ''}`];
    const file = entry?.['flue-source'];
    return file === undefined ? `pkg:${specifier}` : file.replace(/^\.\//, '');
  }
  const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
  return `pkg:${name}`;
}

function walk(node, visit) {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach((child) => walk(child, visit));
  if (typeof node.type === 'string') visit(node);
  for (const key of Object.keys(node)) if (key !== 'type') walk(node[key], visit);
}

function importsOf(file) {
  const source = readFileSync(path.join(root, file), 'utf8');
  const edges = [];
  const add = (specifier, kind) => edges.push({ from: file, to: resolve(file, specifier), specifier, kind });
  const { code } = transformSync(source, {
    loader: file.endsWith('ts') ? 'ts' : 'js',
    format: 'esm',
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
  });
  walk(parse(code, { ecmaVersion: 'latest', sourceType: 'module' }), (node) => {
    if (
      node.type === 'ImportDeclaration' ||
      node.type === 'ExportAllDeclaration' ||
      (node.type === 'ExportNamedDeclaration' && node.source)
    ) {
      add(node.source.value, 'static');
    } else if (node.type === 'ImportExpression' && node.source.type === 'Literal' && typeof node.source.value === 'string') {
      add(node.source.value, 'dynamic');
    }
  });
  const withoutComments = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  for (const match of withoutComments.matchAll(/^\s*(?:import|export)\s+type\s[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm)) add(match[1], 'type');
  return edges;
}

/**
 * The rooms of src/runtime and the rooms each may import (docs/architecture.md draws them). Feature
 * rooms (sandbox, skills, mcp) import authoring because their hooks register through it.
 */
const ROOMS = {
  common: ['sandbox'], // only the Sandbox type, which the public types re-export
  model: ['common'],
  sandbox: ['common', 'authoring'],
  skills: ['common', 'authoring', 'sandbox'],
  mcp: ['common', 'authoring'],
  authoring: ['common', 'model', 'sandbox', 'skills', 'mcp'],
  store: ['common', 'model', 'authoring', 'sandbox'],
  tools: ['common', 'authoring', 'store'],
  engine: ['common', 'model', 'authoring', 'store', 'tools', 'sandbox', 'skills', 'mcp'],
  host: ['common', 'model', 'authoring', 'engine'],
  http: ['common', 'authoring', 'engine', 'host'],
  channels: ['common', 'http'],
};

/** The room of a src/runtime file, `entry` for the entry files at its top, undefined elsewhere. */
function roomOf(file) {
  const match = /^src\/runtime\/(?:([^/]+)\/)?[^/]+$/.exec(file) ?? /^src\/runtime\/([^/]+)\//.exec(file);
  if (match === null) return undefined;
  return match[1] ?? 'entry';
}

const files = sources();
const edges = files.flatMap(importsOf);

const RULES = [
  {
    name: 'shared-imports-nothing',
    why: 'src/shared is imported by both the build and the runtime, so it imports neither',
    test: (e) => e.from.startsWith('src/shared/') && e.to.startsWith('src/') && !e.to.startsWith('src/shared/'),
  },
  {
    name: 'engine-never-imports-a-host',
    why: 'the engine runs under every host; hosts and adapters import it, not the other way round',
    test: (e) => e.from.startsWith('src/runtime/') && /^src\/(node|durable-objects|workflows|otel|build)\//.test(e.to),
  },
  {
    name: 'build-never-imports-the-engine',
    why: 'the build imports only src/shared from the engine side; cli-run.ts may load the runtime by dynamic import of its public entry points',
    test: (e) =>
      e.from.startsWith('src/build/') &&
      /^src\/(runtime|node|durable-objects|workflows|otel)\//.test(e.to) &&
      !(e.from === 'src/build/cli-run.ts' && e.kind === 'dynamic' && e.specifier.startsWith('@flue/runtime')),
  },
  {
    name: 'product-code-never-imports-testing',
    why: 'the engine, the hosts and the adapters never import test code (src/testing)',
    test: (e) => /^src\/(runtime|node|durable-objects|workflows|otel|shared)\//.test(e.from) && e.to.startsWith('src/testing/'),
  },
  {
    name: 'only-the-build-imports-yaml',
    why: 'yaml is for the build on Node; code that runs in a Worker stays small',
    test: (e) => !e.from.startsWith('src/build/') && e.to === 'pkg:yaml',
  },
  {
    name: 'rooms-import-their-neighbours',
    why: 'a room of src/runtime imports only the rooms ROOMS lists for it (add the room there, with a README.md, when you make one)',
    test: (e) => {
      const from = roomOf(e.from);
      const to = roomOf(e.to);
      if (from === undefined || to === undefined || from === to || from === 'entry') return false;
      return to === 'entry' || !(ROOMS[from] ?? []).includes(to);
    },
  },
  {
    name: 'imports-resolve',
    why: 'a relative import names a file that does not exist',
    test: (e) => e.to.startsWith('missing:'),
  },
];

const problems = [];
for (const rule of RULES) {
  const hits = edges.filter(rule.test);
  if (hits.length > 0) {
    problems.push(
      `${rule.name}: ${rule.why}\n${hits.map((e) => `  ${e.from} → ${e.specifier}${e.kind === 'static' ? '' : ` (${e.kind})`}`).join('\n')}`,
    );
  }
}

// Cycles: strongly connected components of the static and type-only import graph (Tarjan).
const graph = new Map(files.map((f) => [f, new Set()]));
for (const e of edges) if (e.kind !== 'dynamic' && graph.has(e.to)) graph.get(e.from).add(e.to);
let index = 0;
const stack = [];
const meta = new Map();
const components = [];
function strongConnect(v) {
  meta.set(v, { index, low: index, onStack: true });
  index++;
  stack.push(v);
  for (const w of graph.get(v)) {
    if (!meta.has(w)) {
      strongConnect(w);
      meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).low);
    } else if (meta.get(w).onStack) meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).index);
  }
  if (meta.get(v).low === meta.get(v).index) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      meta.get(w).onStack = false;
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v).has(v)) components.push(component.sort());
  }
}
for (const file of files) if (!meta.has(file)) strongConnect(file);
if (components.length > 0) {
  const show = (component) => {
    const members = new Set(component);
    const links = component.flatMap((f) => [...graph.get(f)].filter((t) => members.has(t)).map((t) => `    ${f} → ${t}`));
    return `  cycle of ${component.length} files:\n${links.join('\n')}`;
  };
  problems.push(`no-cycles: an import cycle in src/; move the shared piece into its own module\n${components.map(show).join('\n')}`);
}

if (problems.length > 0) {
  process.stderr.write(`Import rules (scripts/check-imports.mjs): ${problems.length} rule(s) broken\n\n${problems.join('\n\n')}\n`);
  process.exit(1);
}
process.stdout.write(`Import rules: ${files.length} files, ${edges.length} imports, no violations.\n`);
