/**
 * Which model providers a Worker can reach, read from the source: the provider prefix of every
 * model id written as a literal in the agent modules and the project modules they import
 * (`useModel('anthropic/…')`, `model: 'openai/…'` in subagent, skill, prompt and compaction
 * options). The build then imports only those pi-ai providers instead of all of them (the full
 * catalog is about ten times the code of one provider).
 *
 * An id computed at run time cannot be read; each such site is reported so the build can warn and
 * point at `providers` in flue.config.ts. Over-inclusion is harmless (a few more KB), so any
 * `model` property with a literal provider prefix counts, whatever object it sits in.
 *
 * Pipeline: one esbuild bundle of the entry files with every package external (only to learn the
 * project files they reach, through the user's tsconfig paths and aliases), then per file one
 * esbuild transform (TS → JS, with a source map for the reported line) read by acorn.
 */
import { readFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { parse, type AnyNode, type Expression } from 'acorn';
import { childNodes } from './ast-nodes.ts';

export interface ComputedModelSite {
  /** Relative to the project root, `/`-separated. */
  file: string;
  /** 1-based, in the original source. */
  line: number;
  /** The call or property, e.g. `useModel(...)` or `model: ...`. */
  what: string;
}

export interface InferredProviders {
  /** Provider ids named by literal model ids, sorted. */
  providers: string[];
  /** Where the first site of each provider is (for messages). */
  sites: Map<string, { file: string; line: number }>;
  computed: ComputedModelSite[];
  /** Project files read. */
  files: string[];
}

const SOURCE = /\.(?:[cm]?[jt]sx?)$/;
const PROVIDER_ID = /^([a-z0-9][a-z0-9-]*)\//;

/** The project files `entries` reach (themselves included), packages excluded. */
async function reachableFiles(root: string, entries: string[], alias: Record<string, string>): Promise<string[]> {
  try {
    const result = await esbuild.build({
      entryPoints: entries,
      absWorkingDir: root,
      bundle: true,
      packages: 'external',
      external: ['cloudflare:*', 'node:*'],
      format: 'esm',
      platform: 'neutral',
      outdir: path.join(root, '.flue-model-scan'),
      write: false,
      metafile: true,
      logLevel: 'silent',
      alias,
      // Only modules can name a model: text, WASM and other assets stay out (no loader needed).
      plugins: [
        {
          name: 'flue-model-scan-assets',
          setup(build) {
            build.onResolve({ filter: /\.[^./\\]+$/ }, (args) =>
              SOURCE.test(args.path) ? undefined : { path: args.path, external: true },
            );
          },
        },
      ],
    });
    return Object.keys(result.metafile.inputs)
      .filter((input) => SOURCE.test(input) && !/(?:^|\/)node_modules\//.test(input))
      .map((input) => path.resolve(root, input));
  } catch {
    // The real bundle reports the error with its context; here the entries alone still count.
    return entries;
  }
}

export async function inferModelProviders(options: {
  root: string;
  entries: string[];
  alias?: Record<string, string>;
}): Promise<InferredProviders> {
  const root = path.resolve(options.root);
  const files = [...new Set(await reachableFiles(root, options.entries, options.alias ?? {}))].sort();
  const found = new Map<string, { file: string; line: number }>();
  const computed: ComputedModelSite[] = [];
  for (const file of files) {
    const rel = path.relative(root, file).split(path.sep).join('/');
    let source: string;
    try {
      source = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    // Cheap pre-filter: a module that never says `model` names none.
    if (!/model/i.test(source)) continue;
    const sites = await scanSource(file, source);
    if (sites === undefined) continue;
    for (const site of sites.literal) if (!found.has(site.provider)) found.set(site.provider, { file: rel, line: site.line });
    for (const site of sites.computed) computed.push({ file: rel, line: site.line, what: site.what });
  }
  const providers = [...found.keys()].sort();
  return { providers, sites: found, computed, files: files.map((f) => path.relative(root, f).split(path.sep).join('/')) };
}

interface SourceSites {
  literal: { provider: string; line: number }[];
  computed: { line: number; what: string }[];
}

/** Model-id sites of one module; undefined when it does not parse (the bundle reports that). */
export async function scanSource(file: string, source: string): Promise<SourceSites | undefined> {
  let code: string;
  let map: SourceMap | undefined;
  try {
    const ext = path.extname(file);
    const loader = ext.includes('ts') ? (ext.endsWith('x') ? 'tsx' : 'ts') : ext.endsWith('x') ? 'jsx' : 'js';
    const out = await esbuild.transform(source, { loader, format: 'esm', target: 'es2022', sourcemap: 'external', sourcefile: file });
    code = out.code;
    if (out.map !== '') map = new SourceMap(JSON.parse(out.map));
  } catch {
    return undefined;
  }
  let program: AnyNode;
  try {
    program = parse(code, { ecmaVersion: 'latest', sourceType: 'module', locations: true }) as AnyNode;
  } catch {
    return undefined;
  }
  const lineOf = (node: AnyNode): number => {
    const loc = node.loc!.start;
    const entry = map?.findEntry(loc.line - 1, loc.column) as { originalLine?: number } | undefined;
    return entry?.originalLine === undefined ? loc.line : entry.originalLine + 1;
  };

  // Top-level `const X = 'anthropic/…'` (also exported): `useModel(X)` is as static as a literal.
  const constants = new Map<string, Expression>();
  for (const statement of (program as AnyNode & { body: AnyNode[] }).body) {
    const declaration = statement.type === 'ExportNamedDeclaration' ? statement.declaration : statement;
    if (declaration?.type !== 'VariableDeclaration' || declaration.kind !== 'const') continue;
    for (const d of declaration.declarations) if (d.id.type === 'Identifier' && d.init) constants.set(d.id.name, d.init);
  }

  const sites: SourceSites = { literal: [], computed: [] };
  /** The provider prefixes an expression can evaluate to, or undefined when it is not static. */
  const providersOf = (node: Expression, depth = 0): string[] | undefined => {
    if (depth > 8) return undefined;
    if (node.type === 'Literal') {
      if (typeof node.value !== 'string') return undefined;
      const match = PROVIDER_ID.exec(node.value);
      // No `provider/` prefix: an invalid id, which the runtime rejects with its own message.
      return match === null ? [] : [match[1]!];
    }
    if (node.type === 'TemplateLiteral') {
      const match = PROVIDER_ID.exec(node.quasis[0]!.value.cooked ?? '');
      return match === null ? undefined : [match[1]!];
    }
    if (node.type === 'ConditionalExpression') {
      const [a, b] = [providersOf(node.consequent, depth + 1), providersOf(node.alternate, depth + 1)];
      return a === undefined || b === undefined ? undefined : [...a, ...b];
    }
    if (node.type === 'LogicalExpression') {
      const [a, b] = [providersOf(node.left, depth + 1), providersOf(node.right, depth + 1)];
      return a === undefined || b === undefined ? undefined : [...a, ...b];
    }
    if (node.type === 'Identifier') {
      if (node.name === 'undefined') return [];
      const init = constants.get(node.name);
      return init === undefined ? undefined : providersOf(init, depth + 1);
    }
    return undefined;
  };
  const record = (value: Expression, at: AnyNode, what: string) => {
    const ids = providersOf(value);
    if (ids === undefined) sites.computed.push({ line: lineOf(at), what });
    else for (const provider of ids) sites.literal.push({ provider, line: lineOf(at) });
  };

  const visit = (node: AnyNode) => {
    if (node.type === 'CallExpression') {
      const callee = node.callee;
      const name =
        callee.type === 'Identifier'
          ? callee.name
          : callee.type === 'MemberExpression' && callee.property.type === 'Identifier'
            ? callee.property.name
            : undefined;
      const first = node.arguments[0];
      if (name === 'useModel' && first !== undefined && first.type !== 'SpreadElement') record(first, node, 'useModel(...)');
    } else if (node.type === 'Property' && !node.computed && propertyName(node.key) === 'model' && node.kind === 'init') {
      record(node.value as Expression, node, node.shorthand ? 'model' : 'model: ...');
    }
    for (const child of childNodes(node)) visit(child);
  };
  visit(program);
  return sites;
}

function propertyName(key: AnyNode): string | undefined {
  if (key.type === 'Identifier') return key.name;
  if (key.type === 'Literal' && typeof key.value === 'string') return key.value;
  return undefined;
}
