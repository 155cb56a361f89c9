/**
 * The Worker as several modules: `dist/worker.js` plus `dist/chunks/*.js`, one module for each piece
 * of code reached only through a dynamic `import()` (a pi-ai provider's SDK client, the virtual
 * sandbox's shell, the parts of the runtime an agent loads on first use) and the code such pieces
 * share. workerd compiles a module when it is first imported, so a Worker's startup compiles
 * `worker.js` and the chunks it imports statically, not the code a request may never need; one
 * bundled file is compiled whole at startup (a lazy `import()` inside it only defers evaluation).
 *
 * esbuild's code splitting keeps every dynamic import's target as an entry point, even one whose
 * `import()` was dropped with dead code (the MCP client when no agent connects to MCP), where the
 * one-file build leaves it out. The one-file build of the same entry decides: a dynamic import whose
 * target contributed nothing to it is unreachable, and resolves to a module that throws saying so.
 * The upload then holds the same code as the one file, split.
 */
import path from 'node:path';
import type * as esbuild from 'esbuild';

/** The folder of dist/ the chunks are written to; the generated wrangler config uploads `*.js` there. */
export const CHUNKS_DIR = 'chunks';

const UNREACHED_NAMESPACE = 'flue-unreached';

/** Inputs (as esbuild names them, relative to its working directory) with bytes in some output of `metafile`. */
export function liveInputs(metafile: esbuild.Metafile): Set<string> {
  const live = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) if (bytesInOutput > 0) live.add(input);
  }
  return live;
}

/**
 * Resolves a dynamic import whose target is not in `live` to a module that throws when loaded: the
 * one-file build proved no code path reaches it.
 */
export function unreachedImportsPlugin(root: string, live: ReadonlySet<string>): esbuild.Plugin {
  return {
    name: 'flue-unreached-imports',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || (args.pluginData as { flueUnreachedCheck?: true } | undefined)?.flueUnreachedCheck === true)
          return undefined;
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          namespace: args.namespace,
          pluginData: { flueUnreachedCheck: true },
        });
        if (resolved.errors.length > 0 || resolved.external || resolved.namespace !== 'file') return undefined;
        if (live.has(path.relative(root, resolved.path).split(path.sep).join('/'))) return resolved;
        return { path: resolved.path, namespace: UNREACHED_NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: UNREACHED_NAMESPACE }, (args) => ({
        contents: `throw new Error(${JSON.stringify(
          `[flue] ${path.relative(root, args.path)} is not in this Worker: the build found no code that imports it. ` +
            'Rebuild with `flue build`; if it persists, report it with the import that reached it.',
        )});\n`,
        loader: 'js',
      }));
    },
  };
}

/**
 * The split build's settings from the one-file build's: `dist/worker.js` stays the entry (what the
 * generated config names as `main`), the chunks go to `dist/chunks/`.
 */
export function splitBuildOptions<O extends esbuild.BuildOptions>(single: O, root: string, live: ReadonlySet<string>): O {
  const { outfile: _outfile, ...rest } = single;
  return {
    ...rest,
    splitting: true,
    outdir: path.join(root, 'dist'),
    entryNames: 'worker',
    chunkNames: `${CHUNKS_DIR}/[name]-[hash]`,
    plugins: [unreachedImportsPlugin(root, live), ...(single.plugins ?? [])],
  } as O;
}
