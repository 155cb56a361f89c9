/**
 * `flue build` for Cloudflare (build-and-cli.md §3): config → app entry → db.ts check → agent scan
 * → wrangler file validation → generated entry → esbuild bundle → outputs.
 *
 * Every check runs and the bundle is produced in memory before anything is written, so a failing
 * build leaves the previous `dist/` untouched. Outputs are written to temporary files and renamed
 * into place; `.flue.wrangler.json` is rewritten only when its bytes change.
 */
import { existsSync, globSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { FlueBuildError } from './build-errors.ts';
import { type ResolvedConfig, SOURCE_EXTENSIONS, formatEsbuildError, loadConfig, requireAppEntry, resolveEntry } from './config.ts';
import { generateEntry } from './entry.ts';
import { bundleBesideLoadCheck } from './load-check.ts';
import { CHUNKS_DIR, liveInputs, splitBuildOptions } from './worker-split.ts';
import { agentBindingPlugin, workerRuntimeConditions, flueRuntimePlugin, graphRoots, importChain, markdownPlugin } from './plugins.ts';
import { packageRoot, resolveRuntimeExport } from './package-root.ts';
import { inferModelProviders } from './model-providers.ts';
import { withDirectApis } from './provider-apis.ts';
import { type ProviderImport, needsWorkersAI, resolveProvider, resolveProviders } from './providers.ts';
import { scanAgents } from './scan.ts';
import type { ScanResult } from './scan-types.ts';
import {
  DEPLOY_REDIRECT_CONTENT,
  DEPLOY_REDIRECT_FILE,
  GENERATED_CONFIG_FILE,
  type UserWranglerConfig,
  checkMigrations,
  mergeWranglerConfig,
  readWranglerConfig,
  serializeWranglerConfig,
  validateWranglerConfig,
} from './wrangler-config.ts';

export interface BuildOptions {
  /** Project root (holds `src/`, `wrangler.jsonc`). */
  root: string;
  minify?: boolean;
  /**
   * Dynamically imported code in modules of their own under `dist/chunks/`, compiled by workerd on
   * first import instead of at startup (default). `flue dev` builds one file, which its source map
   * covers whole.
   */
  split?: boolean;
  /** Progress and warning lines (the CLI prints them on stderr). */
  log?: (line: string) => void;
}

export interface ManifestAgent {
  identity: string;
  exportName: string;
  /** Relative to the project root, `/`-separated. */
  file: string;
  className: string;
  bindingName: string;
}

/** `dist/flue-manifest.json` (build-and-cli.md §3.1). */
export interface FlueManifest {
  agents: ManifestAgent[];
  cloudflareExports: string[];
}

export interface BuildOutputs {
  worker: string;
  sourcemap: string;
  /** The split build's other modules (`dist/chunks/*.js`), imported by `worker.js`; empty for one file. */
  chunks: string[];
  entry: string;
  manifest: string;
  wranglerConfig: string;
  deployRedirect: string;
}

export interface BuildResult {
  root: string;
  manifest: FlueManifest;
  /** Migration and bundling warnings (also logged). */
  warnings: string[];
  /** Absolute paths of everything written. */
  outputs: BuildOutputs;
  /** The generated entry source (also in `dist/entry.generated.mjs`). */
  entrySource: string;
  /** The merged wrangler config bytes (`.flue.wrangler.json`). */
  wranglerConfig: string;
  /** Whether `.flue.wrangler.json` was (re)written by this build. */
  wranglerConfigChanged: boolean;
  /** Whether the esbuild context was reused (an incremental rebuild, `flue dev`). */
  incremental: boolean;
  /** Bytes of every module the Worker uploads (`worker.js` and its chunks), what Cloudflare's size limit counts. */
  bundleBytes: number;
  /** The same, gzip: the sum over the modules. */
  gzipBytes: number;
  /** Bytes of the modules workerd compiles at startup: `worker.js` and the chunks it imports statically. */
  startupBytes: number;
  /** esbuild's metafile of the Worker bundle: which input contributed how many bytes. */
  metafile: esbuild.Metafile;
}

/** One-shot build. */
export async function build(options: BuildOptions): Promise<BuildResult> {
  const builder = createBuilder(options);
  try {
    return await builder.build();
  } finally {
    await builder.dispose();
  }
}

export interface Builder {
  /** Runs the whole pipeline; reuses the esbuild context when only module bodies changed. */
  build(): Promise<BuildResult>;
  dispose(): Promise<void>;
}

interface Prepared {
  config: ResolvedConfig;
  app: string;
  cloudflare: string | undefined;
  scan: ScanResult;
  wrangler: UserWranglerConfig;
  warnings: string[];
  providers: ProviderImport[];
  entry: string;
}

/** A builder that keeps an esbuild context alive between builds (for `flue dev`). */
export function createBuilder(options: BuildOptions): Builder {
  const root = path.resolve(options.root);
  const log = options.log ?? (() => {});
  let context: esbuild.BuildContext<{ write: false; metafile: true }> | undefined;
  let contextKey: string | undefined;
  let running: Promise<unknown> = Promise.resolve();

  const run = async (): Promise<BuildResult> => {
    const prepared = await prepare(root, log);
    const { define, alias } = userBuildOptions(prepared.wrangler);
    const key = JSON.stringify([prepared.entry, prepared.scan, options.minify === true, define, alias]);
    let incremental = true;
    if (context === undefined || key !== contextKey) {
      incremental = false;
      await context?.dispose();
      context = undefined;
      context = await esbuild.context(
        workerBuildOptions({ root, entry: prepared.entry, scan: prepared.scan, minify: options.minify === true, define, alias }),
      );
      contextKey = key;
    }
    log(`[flue] Bundling ${path.join('dist', 'worker.js')}${incremental ? ' (incremental)' : ''}`);
    const bundling = context;
    const modules = [
      prepared.app,
      ...(prepared.cloudflare === undefined ? [] : [prepared.cloudflare]),
      ...prepared.scan.modules.map((m) => m.file),
    ];
    const { result, warnings } = await bundleBesideLoadCheck(() => bundling.rebuild(), {
      root,
      target: 'cloudflare',
      modules,
      define,
      alias,
      log,
    });
    for (const text of warnings) {
      prepared.warnings.push(text);
      log(`[flue] warning: ${text}`);
    }
    checkWorkerGraph(result.metafile, root);
    const split =
      options.split === false
        ? undefined
        : await bundleSplit(
            workerBuildOptions({ root, entry: prepared.entry, scan: prepared.scan, minify: options.minify === true, define, alias }),
            root,
            result.metafile,
          );
    return await writeOutputs(root, prepared, result, split, incremental, log);
  };

  return {
    build() {
      // Builds never overlap: a rebuild waits for the one in flight.
      const next = running.then(run, run);
      running = next.catch(() => {});
      return next;
    },
    async dispose() {
      await running;
      await context?.dispose();
      context = undefined;
    },
  };
}

async function prepare(root: string, log: (line: string) => void): Promise<Prepared> {
  const config = await loadConfig(root);
  const app = requireAppEntry(root, config);
  const db = resolveEntry(root, 'db', config);
  if (db !== undefined) {
    throw new FlueBuildError(
      'UnsupportedPersistenceError',
      `Custom persistence (db.ts) is not supported on the Cloudflare target. Each agent instance keeps its state in its own ` +
        `Durable Object's SQLite; remove ${path.relative(root, db)} (it is only used by \`flue run\` on Node).`,
    );
  }
  const cloudflare = resolveEntry(root, 'cloudflare', config);

  log('[flue] Scanning src/ for agents');
  const files = config.agents === undefined ? undefined : globAgents(root, config.agents);
  const scan = await scanAgents(files === undefined ? { root } : { root, files });
  const agents = scan.modules.flatMap((m) => m.agents.map((a) => ({ ...a, file: m.file })));
  const listed = agents.map((a) => `${a.identity} (${relative(root, a.file)})`).join(', ');
  log(`[flue] Found ${agents.length} agent${agents.length === 1 ? '' : 's'}${agents.length > 0 ? `: ${listed}` : ''}`);

  const wrangler = await readWranglerConfig(root);
  validateWranglerConfig(wrangler.raw, wrangler.label, agents);
  const warnings = checkMigrations(wrangler.raw, wrangler.label, agents);
  const schedules = resolveEntry(root, 'schedules', config);
  if (schedules !== undefined) {
    warnings.push(
      `${relative(root, schedules)} is loaded by the Node server only; on Cloudflare declare "triggers": { "crons": [...] } in ` +
        `${wrangler.label} and handle them in the scheduled() handler of src/cloudflare.ts.`,
    );
  }
  for (const warning of warnings) log(`[flue] warning: ${warning}`);

  const { providers, workersAI } = await buildProviders({
    root,
    config,
    entries: [app, ...(cloudflare === undefined ? [] : [cloudflare]), ...scan.modules.map((m) => m.file)],
    alias: userBuildOptions(wrangler).alias,
    wranglerHasAI: typeof wrangler.raw === 'object' && wrangler.raw !== null && (wrangler.raw as Record<string, unknown>).ai !== undefined,
    warnings,
    log,
  });
  const entry = generateEntry({
    app,
    ...(cloudflare === undefined ? {} : { cloudflare }),
    modules: scan.modules,
    providers,
    workersAI,
  });
  return { config, app, cloudflare, scan, wrangler, warnings, providers, entry };
}

/**
 * The providers the Worker imports: those the source names in literal model ids, plus config
 * `providers`. Shipping every pi-ai provider costs ~10× one provider's code, so none is bundled
 * unless something can reach it; a model id computed at run time is warned about (its provider may
 * be missing, which surfaces as the runtime's unknown-provider error) unless the config lists
 * providers, which then is the app's own statement of what it needs.
 */
async function buildProviders(options: {
  root: string;
  config: ResolvedConfig;
  entries: string[];
  alias: Record<string, string>;
  wranglerHasAI: boolean;
  warnings: string[];
  log: (line: string) => void;
}): Promise<{ providers: ProviderImport[]; workersAI: boolean }> {
  const { root, config, warnings, log } = options;
  const label = config.file === undefined ? 'flue.config.ts' : path.basename(config.file);
  const configured = config.providers === undefined ? [] : await resolveProviders(config.providers, label);
  const inferred = await inferModelProviders({ root, entries: options.entries, alias: options.alias });
  const out = [...configured];
  const warn = (text: string) => {
    warnings.push(text);
    log(`[flue] warning: ${text}`);
  };
  for (const id of inferred.providers) {
    if (id === 'cloudflare' || out.some((p) => p.id === id)) continue;
    const resolved = await resolveProvider(id);
    if (resolved !== undefined) out.push(resolved);
    else {
      // Possibly a provider the app registers itself (setProvider in src/cloudflare.ts): not an error.
      const site = inferred.sites.get(id)!;
      warn(
        `${site.file}:${site.line} names provider "${id}", which is not a pi-ai provider; register it yourself with setProvider(...) or fix the model id.`,
      );
    }
  }
  out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = out.map((p) => p.id);
  if (config.providers === undefined && inferred.computed.length > 0) {
    const where = inferred.computed.map((c) => `${c.file}:${c.line} (${c.what})`).join(', ');
    warn(
      `model id computed at run time at ${where}: its provider cannot be known at build time. ` +
        `The Worker includes ${ids.length > 0 ? `only ${ids.map((id) => `"${id}"`).join(', ')}` : 'no pi-ai provider'} ` +
        `(from the literal model ids). Add every provider it may name to ${label}, e.g. ` +
        `export default { providers: [${[...ids, 'openai']
          .filter((v, i, a) => a.indexOf(v) === i)
          .map((id) => `'${id}'`)
          .join(', ')}] }.`,
    );
  }
  const workersAI = needsWorkersAI({
    inferred: inferred.providers,
    configured: config.providers,
    computedSites: inferred.computed.length,
    wranglerHasAI: options.wranglerHasAI,
  });
  const listed = workersAI ? [...ids, 'cloudflare (Workers AI binding)'] : ids;
  log(
    `[flue] Providers: ${listed.length > 0 ? listed.join(', ') : '(none)'}${config.providers === undefined ? ' (from the model ids in the source)' : ''}`,
  );
  return { providers: await withDirectApis(out), workersAI };
}

/** Config `agents` glob (relative to `src/`), minus the directories the default scan skips. */
export function globAgents(root: string, pattern: string): string[] {
  const src = path.join(root, 'src');
  const excluded = (rel: string) =>
    rel
      .split(/[\\/]/)
      .slice(0, -1)
      .some((part) => part === 'node_modules' || part === 'dist' || part === '.wrangler' || part.startsWith('.'));
  return globSync(pattern, { cwd: src })
    .filter((rel) => (SOURCE_EXTENSIONS as readonly string[]).includes(path.extname(rel)) && !excluded(rel))
    .map((rel) => path.join(src, rel))
    .sort();
}

function userBuildOptions(wrangler: UserWranglerConfig): { define: Record<string, string>; alias: Record<string, string> } {
  const pick = (key: 'define' | 'alias'): Record<string, string> => {
    const value = wrangler.raw[key];
    if (value === undefined) return {};
    if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.values(value).some((v) => typeof v !== 'string')) {
      throw new FlueBuildError('WranglerConfigError', `${wrangler.label} "${key}" must be an object of strings.`);
    }
    return { ...(value as Record<string, string>) };
  };
  const alias = pick('alias');
  // wrangler resolves relative alias targets from the config file's directory (the root).
  for (const [from, to] of Object.entries(alias)) if (to.startsWith('.')) alias[from] = path.resolve(path.dirname(wrangler.path), to);
  return { define: pick('define'), alias };
}

const NODE_BUILTINS = builtinModules.filter((m) => !m.startsWith('_'));

/** The esbuild settings of build-and-cli.md §3.3 (exported for tests and tooling). */
export function workerBuildOptions(options: {
  root: string;
  entry: string;
  scan: ScanResult;
  minify: boolean;
  define?: Record<string, string>;
  alias?: Record<string, string>;
}): esbuild.BuildOptions & { write: false; metafile: true } {
  return {
    stdin: {
      contents: options.entry,
      // The entry's own bare imports (pi-ai providers) resolve from this package: the same copy
      // the runtime uses. User modules are imported by absolute path.
      resolveDir: packageRoot(),
      sourcefile: 'entry.generated.mjs',
      loader: 'js',
    },
    absWorkingDir: options.root,
    outfile: path.join(options.root, 'dist', 'worker.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    target: 'es2022',
    external: ['cloudflare:*', 'node:*', ...NODE_BUILTINS],
    // Linked: the `sourceMappingURL` comment is how wrangler finds the map, so the stacks it
    // prints under `flue dev` point at src/ instead of dist/worker.js.
    sourcemap: 'linked',
    minify: options.minify,
    write: false,
    metafile: true,
    logLevel: 'silent',
    loader: { '.md': 'text' },
    define: options.define ?? {},
    alias: options.alias ?? {},
    plugins: [flueRuntimePlugin({ conditions: workerRuntimeConditions() }), markdownPlugin(), agentBindingPlugin(options.scan.modules)],
  };
}

/**
 * Node-only code in the Worker graph fails the build with its import chain; so does a second copy
 * of `@flue/runtime` (build-and-cli.md §3.3).
 */
function checkWorkerGraph(metafile: esbuild.Metafile, root: string): void {
  // The entry is virtual (stdin) and absent from the metafile: start from what it imports.
  const roots = graphRoots(metafile);
  const stdinKey = relative(root, path.join(packageRoot(), 'entry.generated.mjs'));
  const show = (chain: string[]) =>
    (chain[0] === stdinKey ? chain.slice(1) : chain)
      .map((step) => `  → ${step}`)
      .join('\n')
      .replace(/^/, '  dist/entry.generated.mjs\n');

  const nodeEntry = path.relative(root, resolveRuntimeExport('@flue/runtime/node', workerRuntimeConditions())).split(path.sep).join('/');
  const viaNode = importChain(metafile, roots, (_, imported) => imported === nodeEntry);
  if (viaNode !== undefined) {
    throw new FlueBuildError(
      'NodeOnlyImportError',
      `The Worker imports @flue/runtime/node (start, sqlite, local), which only runs on Node. Import chain:\n${show(viaNode)}\n` +
        'Keep Node-only code out of modules the Worker loads (use `import type` for types).',
    );
  }
  const viaSqlite = importChain(metafile, roots, (_, imported) => imported === 'node:sqlite');
  if (viaSqlite !== undefined) {
    throw new FlueBuildError(
      'NodeOnlyImportError',
      `The Worker imports node:sqlite, which Cloudflare Workers do not provide. Import chain:\n${show(viaSqlite)}`,
    );
  }
  const copies = new Set<string>();
  // An installed package is itself at node_modules/@flue/runtime (the project's alias): only
  // another directory counts as a second copy.
  const self = relative(root, packageRoot());
  for (const input of Object.keys(metafile.inputs)) {
    const match = /^(.*node_modules\/(?:@flue\/runtime|flue-workers))\//.exec(input);
    if (match !== null && match[1] !== self) copies.add(match[1]!);
  }
  if (copies.size > 0) {
    throw new FlueBuildError(
      'DuplicateRuntimeError',
      `The Worker bundle contains a second copy of @flue/runtime (${[...copies].join(', ')}) besides ${packageRoot()}. ` +
        'Its registries are module-scoped, so two copies break agent registration. Import it only as "@flue/runtime".',
    );
  }
}

function relative(root: string, file: string): string {
  return path.relative(root, file).split(path.sep).join('/');
}

let stagingCounter = 0;

type SplitResult = esbuild.BuildResult<{ write: false; metafile: true }>;

/** The split build of the entry the one-file build bundled (worker-split.ts); its failure is a bundling error. */
async function bundleSplit(
  single: esbuild.BuildOptions & { write: false; metafile: true },
  root: string,
  metafile: esbuild.Metafile,
): Promise<SplitResult> {
  try {
    return await esbuild.build(splitBuildOptions(single, root, liveInputs(metafile)));
  } catch (error) {
    throw new FlueBuildError('BundleError', `Bundling the split Worker failed:\n${formatEsbuildError(error)}`, {}, error);
  }
}

/** Modules `worker.js` imports statically, transitively: what workerd compiles at startup. */
function startupModules(metafile: esbuild.Metafile, root: string): Set<string> {
  const entry = relative(root, path.join(root, 'dist', 'worker.js'));
  const seen = new Set<string>([entry]);
  const queue = [entry];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    for (const imported of metafile.outputs[file]?.imports ?? []) {
      if (imported.kind !== 'import-statement' || imported.external || seen.has(imported.path)) continue;
      seen.add(imported.path);
      queue.push(imported.path);
    }
  }
  return seen;
}

async function writeOutputs(
  root: string,
  prepared: Prepared,
  result: esbuild.BuildResult<{ write: false; metafile: true }>,
  split: SplitResult | undefined,
  incremental: boolean,
  log: (line: string) => void,
): Promise<BuildResult> {
  const dist = path.join(root, 'dist');
  const chunksDir = path.join(dist, CHUNKS_DIR);
  const emitted = (split ?? result).outputFiles;
  const chunkFiles = emitted.filter((f) => path.dirname(f.path) === chunksDir);
  const outputs: BuildOutputs = {
    worker: path.join(dist, 'worker.js'),
    sourcemap: path.join(dist, 'worker.js.map'),
    chunks: chunkFiles.filter((f) => f.path.endsWith('.js')).map((f) => f.path),
    entry: path.join(dist, 'entry.generated.mjs'),
    manifest: path.join(dist, 'flue-manifest.json'),
    wranglerConfig: path.join(root, GENERATED_CONFIG_FILE),
    deployRedirect: path.join(root, DEPLOY_REDIRECT_FILE),
  };
  const js = emitted.find((f) => f.path === outputs.worker);
  const map = emitted.find((f) => f.path === outputs.sourcemap);
  if (js === undefined || map === undefined) throw new FlueBuildError('BundleError', 'esbuild produced no dist/worker.js.');

  const agents = prepared.scan.modules.flatMap((m) =>
    m.agents.map((a) => ({
      identity: a.identity,
      exportName: a.exportName,
      file: relative(root, m.file),
      className: a.className,
      bindingName: a.bindingName,
    })),
  );
  const generated = new Set(agents.map((a) => a.className));
  const outputMeta =
    result.metafile.outputs[relative(root, outputs.worker)] ??
    Object.values(result.metafile.outputs).find((o) => o.entryPoint === '<stdin>');
  const cloudflareExports =
    prepared.cloudflare === undefined ? [] : (outputMeta?.exports ?? []).filter((e) => e !== 'default' && !generated.has(e)).sort();
  const manifest: FlueManifest = { agents, cloudflareExports };
  const wranglerConfig = serializeWranglerConfig(mergeWranglerConfig(prepared.wrangler.raw, agents));

  // Everything is known; write dist/ through temporary files renamed into place. The staging
  // directory sits under .wrangler/ (same filesystem, and wrangler dev's watcher ignores it).
  const staging = path.join(root, '.wrangler', 'tmp', `flue-build-${process.pid}-${++stagingCounter}`);
  const files: [string, Uint8Array][] = [
    // Chunks first: a worker.js that imports them must not land before they do.
    ...chunkFiles.map((f): [string, Uint8Array] => [f.path, f.contents]),
    [outputs.sourcemap, map.contents],
    [outputs.entry, Buffer.from(prepared.entry)],
    [outputs.manifest, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)],
    [outputs.worker, js.contents], // last: wrangler dev reloads when dist/ changes
  ];
  // Unchanged files are left alone (each write makes wrangler dev reload).
  const changed: [string, Uint8Array][] = [];
  for (const [file, data] of files) if (!(await sameBytes(file, data))) changed.push([file, data]);
  if (changed.length > 0) {
    await mkdir(staging, { recursive: true });
    await mkdir(chunkFiles.length > 0 ? chunksDir : dist, { recursive: true });
    try {
      for (const [file, data] of changed) await writeFile(path.join(staging, path.basename(file)), data);
      for (const [file] of changed) await rename(path.join(staging, path.basename(file)), file);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  // Chunk names carry their content's hash: the ones of an earlier build go, after the new worker.js
  // is in place (the generated config uploads every chunk there is).
  const kept = new Set(chunkFiles.map((f) => path.basename(f.path)));
  if (existsSync(chunksDir)) {
    for (const name of await readdir(chunksDir)) if (!kept.has(name)) await rm(path.join(chunksDir, name), { force: true });
  }
  const wranglerConfigChanged = await writeIfChanged(outputs.wranglerConfig, wranglerConfig);
  await writeIfChanged(outputs.deployRedirect, DEPLOY_REDIRECT_CONTENT);

  const modules = [js, ...chunkFiles.filter((f) => f.path.endsWith('.js'))];
  const atStartup = split === undefined ? undefined : startupModules(split.metafile, root);
  const bundleBytes = modules.reduce((sum, f) => sum + f.contents.byteLength, 0);
  const gzipBytes = modules.reduce((sum, f) => sum + gzipSync(f.contents).byteLength, 0);
  const startupBytes = modules
    .filter((f) => atStartup === undefined || atStartup.has(relative(root, f.path)))
    .reduce((sum, f) => sum + f.contents.byteLength, 0);
  log(
    `[flue] dist/worker.js${chunkFiles.length > 0 ? ` + ${modules.length - 1} chunks` : ''}  ${kib(bundleBytes)} KiB  (gzip ${kib(gzipBytes)} KiB` +
      `${chunkFiles.length > 0 ? `; compiled at startup ${kib(startupBytes)} KiB` : ''})`,
  );
  return {
    root,
    manifest,
    warnings: prepared.warnings,
    outputs,
    entrySource: prepared.entry,
    wranglerConfig,
    wranglerConfigChanged,
    incremental,
    bundleBytes,
    gzipBytes,
    startupBytes,
    metafile: (split ?? result).metafile,
  };
}

function kib(bytes: number): string {
  return (bytes / 1024).toFixed(2);
}

async function sameBytes(file: string, data: Uint8Array): Promise<boolean> {
  if (!existsSync(file)) return false;
  return Buffer.from(data).equals(await readFile(file));
}

/** Writes `data` only when the file's bytes differ (atomic rename). Returns whether it wrote. */
export async function writeIfChanged(file: string, data: string): Promise<boolean> {
  if (existsSync(file) && (await readFile(file, 'utf8')) === data) return false;
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, file);
  return true;
}
