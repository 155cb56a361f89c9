/**
 * `flue build --target node`: config → app entry → agent scan → optional `db.ts` and
 * `schedules.ts`, and the wrangler file's crons for `app.ts`'s `scheduled` handler → generated
 * server entry → one esbuild bundle, `dist/server.mjs`.
 *
 * The bundle holds the project, `@flue/runtime` (its built dist/, as for the Worker) and every
 * dependency, so `node dist/server.mjs` needs no install beside it. As with the Worker
 * build, nothing is written until the bundle exists in memory.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { globAgents } from './build.ts';
import { FlueBuildError } from './build-errors.ts';
import { loadConfig, requireAppEntry, resolveEntry } from './config.ts';
import { bundleBesideLoadCheck } from './load-check.ts';
import { generateNodeEntry } from './node-entry.ts';
import {
  NODE_CONDITIONS,
  agentBindingPlugin,
  cloudflareExternalPlugin,
  flueRuntimePlugin,
  graphRoots,
  importChain,
  markdownPlugin,
  processNodeConditions,
} from './plugins.ts';
import { packageRoot } from './package-root.ts';
import { resolveProviders } from './providers.ts';
import { withDirectApis } from './provider-apis.ts';
import { scanAgents } from './scan.ts';
import { declaredCrons } from './wrangler-config.ts';

export interface NodeBuildOptions {
  root: string;
  minify?: boolean;
  log?: (line: string) => void;
}

export interface NodeManifest {
  target: 'node';
  agents: { identity: string; exportName: string; file: string }[];
  /** Project-relative paths of the optional entries the server loads. */
  db: string | null;
  schedules: string | null;
  /** wrangler.jsonc `triggers.crons`: they fire `app.ts`'s `scheduled` handler, if it has one. */
  crons: string[];
}

export interface NodeBuildResult {
  root: string;
  manifest: NodeManifest;
  entrySource: string;
  outputs: { server: string; sourcemap: string; entry: string; manifest: string };
  bundleBytes: number;
}

/** The server's file name under `dist/`. */
export const SERVER_FILE = 'server.mjs';

export async function buildNodeServer(options: NodeBuildOptions): Promise<NodeBuildResult> {
  const root = path.resolve(options.root);
  const log = options.log ?? (() => {});
  const config = await loadConfig(root);
  const app = requireAppEntry(root, config);
  const cloudflare = resolveEntry(root, 'cloudflare', config);
  if (cloudflare !== undefined) log(`[flue] Note: ${rel(root, cloudflare)} is a Cloudflare entry; the Node server does not load it.`);
  const db = resolveEntry(root, 'db', config);
  const schedules = resolveEntry(root, 'schedules', config);
  const crons = await declaredCrons(root);

  log('[flue] Scanning src/ for agents');
  const files = config.agents === undefined ? undefined : globAgents(root, config.agents);
  const scan = await scanAgents(files === undefined ? { root } : { root, files });
  const agents = scan.modules.flatMap((m) =>
    m.agents.map((a) => ({ identity: a.identity, exportName: a.exportName, file: rel(root, m.file) })),
  );
  if (agents.length === 0) {
    throw new FlueBuildError(
      'NoAgentsError',
      "The Node server found no agents. Mark at least one module under src/ with 'use agent' and export an agent function from it.",
    );
  }
  log(`[flue] Found ${agents.length} agent${agents.length === 1 ? '' : 's'}: ${agents.map((a) => `${a.identity} (${a.file})`).join(', ')}`);

  const providers =
    config.providers === undefined
      ? undefined
      : await withDirectApis(
          await resolveProviders(config.providers, config.file === undefined ? 'flue.config' : path.basename(config.file)),
        );
  const entry = generateNodeEntry({
    app,
    modules: scan.modules,
    ...(db === undefined ? {} : { db }),
    ...(schedules === undefined ? {} : { schedules }),
    ...(crons.length === 0 ? {} : { crons }),
    ...(providers === undefined ? {} : { providers }),
  });

  const dist = path.join(root, 'dist');
  const outfile = path.join(dist, SERVER_FILE);
  log(`[flue] Bundling ${path.join('dist', SERVER_FILE)}`);
  const bundle = () =>
    esbuild.build({
      stdin: { contents: entry, resolveDir: packageRoot(), sourcefile: 'server.entry.generated.mjs', loader: 'js' },
      absWorkingDir: root,
      outfile,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node22',
      conditions: [...NODE_CONDITIONS],
      banner: { js: SERVER_BANNER },
      sourcemap: 'linked',
      minify: options.minify === true,
      // Identities come from the scan, but error messages and logs read better with real names.
      keepNames: true,
      write: false,
      metafile: true,
      logLevel: 'silent',
      loader: { '.md': 'text' },
      // @flue/runtime resolves as in `flue run` and the Worker build: to the package's built dist/
      // (an installed package ships nothing else), or to its sources when this process itself
      // runs with `--conditions=flue-source` (this repository's tests).
      plugins: [
        flueRuntimePlugin({ conditions: processNodeConditions() }),
        markdownPlugin(),
        agentBindingPlugin(scan.modules),
        cloudflareExternalPlugin(),
      ],
    });
  const { result, warnings } = await bundleBesideLoadCheck(bundle, {
    root,
    target: 'node',
    modules: [app, ...scan.modules.map((m) => m.file)],
    log,
  });
  for (const text of warnings) log(`[flue] warning: ${text}`);
  const chain = importChain(result.metafile, graphRoots(result.metafile), (_, imported) => imported.startsWith('cloudflare:'));
  if (chain !== undefined) {
    // The generated entry is virtual (stdin): name it by the file the build writes for inspection.
    const steps = ['dist/server.entry.generated.mjs', ...(chain[0]?.endsWith('server.entry.generated.mjs') ? chain.slice(1) : chain)];
    throw new FlueBuildError(
      'CloudflareOnlyImportError',
      `The Node server imports "${chain.at(-1)}", which exists only on Cloudflare Workers. Import chain:\n` +
        steps.map((step, i) => `  ${i === 0 ? '' : '→ '}${step}`).join('\n') +
        '\nKeep Cloudflare-only code out of modules the Node server loads (use `import type` for types), or build for Cloudflare.',
    );
  }

  const js = result.outputFiles.find((f) => f.path === outfile);
  const map = result.outputFiles.find((f) => f.path === `${outfile}.map`);
  if (js === undefined || map === undefined) throw new FlueBuildError('BundleError', `esbuild produced no dist/${SERVER_FILE}.`);
  const manifest: NodeManifest = {
    target: 'node',
    agents,
    db: db === undefined ? null : rel(root, db),
    schedules: schedules === undefined ? null : rel(root, schedules),
    crons,
  };
  const outputs = {
    server: outfile,
    sourcemap: `${outfile}.map`,
    entry: path.join(dist, 'server.entry.generated.mjs'),
    manifest: path.join(dist, 'flue-manifest.json'),
  };
  await mkdir(dist, { recursive: true });
  const writes: [string, Uint8Array][] = [
    [outputs.sourcemap, map.contents],
    [outputs.entry, Buffer.from(entry)],
    [outputs.manifest, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)],
    [outputs.server, js.contents], // last: a watcher restarting on dist/server.mjs sees a complete build
  ];
  for (const [file, data] of writes) {
    if (existsSync(file) && Buffer.from(data).equals(await readFile(file))) continue;
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, data);
    await rename(tmp, file);
  }
  log(`[flue] dist/${SERVER_FILE}  ${(js.contents.byteLength / 1024).toFixed(2)} KiB`);
  return { root, manifest, entrySource: entry, outputs, bundleBytes: js.contents.byteLength };
}

/**
 * Runs before every bundled module. A Node older than 22.19 (often the machine's own, where the
 * project's scripts use the node@22 it installs) is refused with what to run instead: it lacks
 * node:sqlite, and would otherwise die deep in the store's first query. And CommonJS dependencies
 * call require() for Node builtins, which an ES module lacks.
 */
const SERVER_BANNER = [
  "const [__flueNodeMajor, __flueNodeMinor] = process.versions.node.split('.').map(Number);",
  'if (__flueNodeMajor < 22 || (__flueNodeMajor === 22 && __flueNodeMinor < 19)) {',
  '  process.stderr.write(',
  '    `[flue] This server needs Node.js 22.19 or newer (this is ${process.version}). ` +',
  "      'In a project made by `flue init`, `npx node dist/server.mjs` runs it with the node@22 the project installs.\\n',",
  '  );',
  '  process.exit(1);',
  '}',
  "import { createRequire as __flueCreateRequire } from 'node:module';",
  'const require = __flueCreateRequire(import.meta.url);',
].join('\n');

function rel(root: string, file: string): string {
  return path.relative(root, file).split(path.sep).join('/');
}
