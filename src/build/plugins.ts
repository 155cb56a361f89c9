/**
 * esbuild plugins shared by the Worker build and `flue run` (build-and-cli.md §1.4, §2.1, §3.3).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Metafile, Plugin } from 'esbuild';
import { resolveRuntimeExport, runtimeSubpath } from './package-root.ts';
import type { ScannedModule } from './scan-types.ts';

export const WORKER_CONDITIONS = ['workerd', 'worker', 'browser', 'import', 'default'] as const;
export const NODE_CONDITIONS = ['node', 'import', 'default'] as const;

/**
 * Resolves `@flue/runtime` and `@flue/runtime/*` to this package's files (its `exports` map), so
 * every importer in the graph shares one copy. `external: true` leaves the import in the output as
 * a `file:` URL (for `flue run`, where the CLI process imports the same files).
 */
export function flueRuntimePlugin(options: { conditions: readonly string[]; external?: boolean }): Plugin {
  return {
    name: 'flue-runtime',
    setup(build) {
      build.onResolve({ filter: /^@flue\/runtime(?:\/.*)?$/ }, (args) => {
        if (runtimeSubpath(args.path) === undefined) return undefined;
        let file: string;
        try {
          file = resolveRuntimeExport(args.path, options.conditions);
        } catch (error) {
          return { errors: [{ text: (error as Error).message }] };
        }
        return options.external ? { path: pathToFileURL(file).href, external: true } : { path: file };
      });
    },
  };
}

/**
 * `.md` imports (build-and-cli.md §2.1): `import text from './x.md'` → the file's text.
 * Rejects import queries, legacy import attributes and dynamic imports of `SKILL.md`.
 * Static `SKILL.md` imports (skill packaging) are not implemented by this build yet.
 */
export function markdownPlugin(): Plugin {
  return {
    name: 'flue-markdown',
    setup(build) {
      build.onResolve({ filter: /\.md(?:\?.*)?$/i }, async (args) => {
        const query = args.path.indexOf('?');
        if (query !== -1) {
          return { errors: [{ text: `[flue] Import queries are not supported on .md imports ("${args.path}"). Use a plain import: import text from '${args.path.slice(0, query)}'.` }] };
        }
        const attributeType = args.with?.['type'];
        if (attributeType !== undefined) {
          return {
            errors: [
              {
                text: `[flue] Import attributes (with { type: '${attributeType}' }) are not supported on "${args.path}". Use a plain import: import text from '${args.path}' (SKILL.md files are recognized by name).`,
              },
            ],
          };
        }
        const isSkill = path.basename(args.path) === 'SKILL.md';
        if (isSkill && (args.kind === 'dynamic-import' || args.kind === 'require-call')) {
          return { errors: [{ text: `[flue] Dynamic import of "${args.path}": use a static SKILL.md import.` }] };
        }
        if (isSkill) {
          return { errors: [{ text: `[flue] "${args.path}": SKILL.md imports (skill packaging) are not supported by this build yet.` }] };
        }
        return undefined; // plain .md: default resolution, loaded as text (loader below)
      });
    },
  };
}

/**
 * The identity-binding plugin (build-and-cli.md §1.4): appends to each scanned agent module a
 * self-namespace import and one `__flueBindAgentModule(self[export], { identity })` call per agent,
 * so identities survive minification.
 */
export function agentBindingPlugin(modules: readonly ScannedModule[]): Plugin {
  const byFile = new Map(modules.map((m) => [path.resolve(m.file), m]));
  return {
    name: 'flue-agent-binding',
    setup(build) {
      build.onLoad({ filter: /\.(?:[cm]?[jt]s)$/ }, async (args) => {
        if (args.namespace !== 'file') return undefined;
        const scanned = byFile.get(path.resolve(args.path));
        if (scanned === undefined) return undefined;
        const source = await readFile(args.path, 'utf8');
        return { contents: source + agentBindingFooter(scanned), loader: loaderFor(args.path), resolveDir: path.dirname(args.path) };
      });
    },
  };
}

export function agentBindingFooter(scanned: ScannedModule): string {
  const lines = [
    '',
    ';',
    "import { __flueBindAgentModule as __flue_bind__ } from '@flue/runtime';",
    `import * as __flue_self__ from ${JSON.stringify(scanned.file)};`,
    ...scanned.agents.map(
      (a) => `__flue_bind__(__flue_self__[${JSON.stringify(a.exportName)}], { identity: ${JSON.stringify(a.identity)} });`,
    ),
    '',
  ];
  return lines.join('\n');
}

function loaderFor(file: string): 'ts' | 'js' {
  return /\.[cm]?ts$/.test(file) ? 'ts' : 'js';
}

/**
 * The import chain from one of `entries` to the first import that `matches`, read from an esbuild
 * metafile (paths as esbuild prints them, relative to its working directory). The chain ends with
 * the import as written in the source.
 */
export function importChain(
  metafile: Metafile,
  entries: readonly string[],
  matches: (importer: string, imported: string) => boolean,
): string[] | undefined {
  const parents = new Map<string, string | undefined>(entries.map((e) => [e, undefined]));
  const queue = [...entries];
  while (queue.length > 0) {
    const current = queue.shift()!;
    const input = metafile.inputs[current];
    if (input === undefined) continue;
    for (const imported of input.imports) {
      if (matches(current, imported.path)) {
        const chain = [imported.original ?? imported.path, current];
        for (let p = parents.get(current); p !== undefined; p = parents.get(p)) chain.push(p);
        return chain.reverse();
      }
      if (!imported.external && !parents.has(imported.path)) {
        parents.set(imported.path, current);
        queue.push(imported.path);
      }
    }
  }
  return undefined;
}

/** Inputs no other input imports: the modules a virtual (stdin) entry imports directly. */
export function graphRoots(metafile: Metafile): string[] {
  const imported = new Set<string>();
  for (const input of Object.values(metafile.inputs)) for (const i of input.imports) imported.add(i.path);
  return Object.keys(metafile.inputs).filter((key) => !imported.has(key));
}
