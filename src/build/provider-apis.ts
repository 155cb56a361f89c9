/**
 * Which pi-ai API module a provider factory streams through, when it streams through exactly one
 * and hands it over untouched. pi-ai's factories pass `createProvider` a lazy wrapper of that module
 * (`api: anthropicMessagesApi()`, from `../api/anthropic-messages.lazy.js`), which imports the module
 * again at every model call and forwards every event through one more stream. The generated entry
 * loads the module beside the factory and the runtime calls it directly (`withLoadedApi`), as
 * a hand-written Worker would; a factory that wraps its API (Workers AI's `cloudflareStreams(...)`)
 * or has several keeps pi-ai's own path. Read from the factory's source with acorn: a shape this
 * does not recognise only means the lazy path stays.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AnyNode, type Expression, parse } from 'acorn';
import { childNodes } from './ast-nodes.ts';
import type { ProviderImport } from './providers.ts';

/** `../api/<name>.lazy.js`, as a provider module imports a lazy API. */
const LAZY_API_IMPORT = /^\.\.\/api\/([\w-]+)\.lazy\.js$/;

/**
 * `providers`, each with the API module it streams through where it has one: what the Worker's
 * loader (entry.ts) and the Node server's entry (node-entry.ts) call directly. Only the configured
 * or inferred providers are read, not pi-ai's whole catalog (Node's `start()` has a checked table
 * of those: node/builtin-apis.ts).
 */
export async function withDirectApis(providers: readonly ProviderImport[]): Promise<ProviderImport[]> {
  return Promise.all(
    providers.map(async (provider) => {
      const api = await directApiOf(provider.specifier);
      return api === undefined ? provider : { ...provider, api };
    }),
  );
}

/**
 * The specifier of the API module the provider module at `specifier` streams through (e.g.
 * `@earendil-works/pi-ai/api/anthropic-messages`), or undefined when it does not stream through
 * exactly one API module handed over as is. Never fails a build: a source it cannot find, read or
 * parse (a pi-ai release in syntax acorn does not know yet) leaves pi-ai's own path.
 */
export async function directApiOf(specifier: string): Promise<string | undefined> {
  try {
    const file = fileURLToPath(import.meta.resolve(specifier));
    const lazy = lazyApiCall(await readFile(file, 'utf8'));
    if (lazy === undefined) return undefined;
    const lazyFile = path.join(path.dirname(file), '..', 'api', `${lazy.module}.lazy.js`);
    const target = lazyApiTarget(await readFile(lazyFile, 'utf8'), lazy.exportName);
    if (target === undefined) return undefined;
    const api = specifier.replace(/\/providers\/[^/]+$/, `/api/${target}`);
    const loaded = (await import(api)) as Record<string, unknown>;
    return typeof loaded.stream === 'function' && typeof loaded.streamSimple === 'function' ? api : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The lazy API a provider module's one `api:` property calls with no arguments (`api: xApi()`, `xApi`
 * imported from `../api/<module>.lazy.js`): the module and the name it exports the wrapper under.
 */
export function lazyApiCall(source: string): { module: string; exportName: string } | undefined {
  const program = parse(source, { ecmaVersion: 'latest', sourceType: 'module' });
  const lazyImports = new Map<string, { module: string; exportName: string }>();
  for (const statement of program.body) {
    if (statement.type !== 'ImportDeclaration') continue;
    const match = LAZY_API_IMPORT.exec(String(statement.source.value));
    if (match === null) continue;
    for (const spec of statement.specifiers) {
      if (spec.type === 'ImportSpecifier' && spec.imported.type === 'Identifier') {
        lazyImports.set(spec.local.name, { module: match[1]!, exportName: spec.imported.name });
      }
    }
  }
  const apis = nodesOf(program).filter(
    (node) => node.type === 'Property' && !node.computed && node.key.type === 'Identifier' && node.key.name === 'api',
  );
  if (apis.length !== 1 || apis[0]!.type !== 'Property') return undefined;
  const value = apis[0].value as Expression;
  if (value.type !== 'CallExpression' || value.arguments.length > 0 || value.callee.type !== 'Identifier') return undefined;
  return lazyImports.get(value.callee.name);
}

/**
 * The module a lazy API export loads when it is exactly `() => lazyApi(() => import("./<module>.js"))`:
 * nothing added to the calls or the stream, so calling the module itself is the same.
 */
export function lazyApiTarget(source: string, exportName: string): string | undefined {
  const program = parse(source, { ecmaVersion: 'latest', sourceType: 'module' });
  for (const statement of program.body) {
    if (statement.type !== 'ExportNamedDeclaration' || statement.declaration?.type !== 'VariableDeclaration') continue;
    for (const declarator of statement.declaration.declarations) {
      if (declarator.id.type !== 'Identifier' || declarator.id.name !== exportName) continue;
      const factory = declarator.init;
      if (factory?.type !== 'ArrowFunctionExpression' || factory.params.length > 0) return undefined;
      const call = factory.body;
      if (call.type !== 'CallExpression' || call.callee.type !== 'Identifier' || call.callee.name !== 'lazyApi') return undefined;
      if (call.arguments.length !== 1) return undefined;
      const load = call.arguments[0]!;
      if (load.type !== 'ArrowFunctionExpression' || load.body.type !== 'ImportExpression') return undefined;
      const from = load.body.source;
      if (from.type !== 'Literal' || typeof from.value !== 'string') return undefined;
      return /^\.\/([\w-]+)\.js$/.exec(from.value)?.[1];
    }
  }
  return undefined;
}

/** Every node of the tree, depth first. */
function nodesOf(node: AnyNode): AnyNode[] {
  return [node, ...childNodes(node).flatMap(nodesOf)];
}
