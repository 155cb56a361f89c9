/**
 * The build loads the app entry (and `src/cloudflare.*`) and the agent modules once, so that whatever throws at module load (a
 * malformed `defineTool()`/`defineSkill()`/`defineSubagent()`/`defineMcpConnection()`, a hook
 * called at module top level, any other top-level throw) fails the build with its message and the
 * `src/` line that threw, instead of passing and then killing the server that loads the bundle.
 *
 * The modules are bundled for Node (project sources bundled, packages left to Node, the runtime
 * the very files the CLI runs from: the package's dist/ when installed) and imported in a child
 * process with source maps on, so the stack points at the sources and nothing the modules do at top
 * level (timers, global installs) touches the CLI or outlives the check; `cloudflare:*` imports get
 * a stand-in there. The child costs a Node start and the runtime's import (well under a second);
 * builds run it beside their own bundling.
 *
 * Node is not workerd, so for the Cloudflare target only errors thrown from the project's own
 * `src/` count: a package that loads on workerd but not on Node is not the user's definition error.
 */
import { spawn } from 'node:child_process';
import { mkdir, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { FlueBuildError } from './build-errors.ts';
import { nodeModulesBuildOptions, outputUrlFor, processNodeConditions } from './plugins.ts';
import { type BuildTarget, formatEsbuildError, formatMessage } from './config.ts';
import { resolveRuntimeExport } from './package-root.ts';

/** A module that does not finish loading in this time (a top-level await that never settles) is not judged. */
const LOAD_TIMEOUT_MS = 15_000;
const RESULT_MARKER = '\u0000flue-load-check:';

export class ModuleLoadError extends FlueBuildError {
  /** `src/…:line:column` of the throwing code, when a frame of the stack is in `src/`. */
  readonly location: string | undefined;

  constructor(module: string, location: string | undefined, message: string, errorName: string) {
    const detail = message.replace(/^\[flue\]\s*/, '');
    const shown = errorName === 'Error' || errorName === '' ? detail : `${errorName}: ${detail}`;
    super(
      'ModuleLoadError',
      `${location ?? module}: ${shown} ` +
        `(thrown ${location === undefined ? `while loading ${module}` : 'at module load'}: top-level code runs as the app starts, so it fails the build)`,
      { file: module },
    );
    this.location = location;
  }
}

export interface LoadCheckOptions {
  root: string;
  target: BuildTarget;
  /** Absolute paths of the modules to load, in the order the app loads them. */
  modules: readonly string[];
  /** The project's esbuild aliases (wrangler `alias`), so the check resolves as the bundle does. */
  alias?: Record<string, string>;
  define?: Record<string, string>;
  log?: (line: string) => void;
}

interface ChildReport {
  /** Index into the loaded modules; absent when every module loaded. */
  index?: number;
  name?: string;
  message?: string;
  stack?: string;
}

let checkCounter = 0;

/** Loads `modules` one by one; throws `ModuleLoadError` for the first that throws. */
export async function checkModuleLoad(options: LoadCheckOptions): Promise<void> {
  const { root, modules } = options;
  const log = options.log ?? (() => {});
  if (modules.length === 0) return;
  // Under the project's node_modules, so the packages left to Node resolve from there. Through its
  // real path: Node loads a module by its real path and resolves the source map's relative paths
  // from there, so with node_modules a symlink they would point beside the wrong src/.
  const cache = path.join(root, 'node_modules', '.cache', 'flue');
  await mkdir(cache, { recursive: true });
  const outdir = path.join(await realpath(cache), `load-check-${process.pid}-${++checkCounter}`);
  const conditions = processNodeConditions();
  try {
    let result: esbuild.BuildResult<{ metafile: true }>;
    try {
      result = await esbuild.build({
        ...nodeModulesBuildOptions({ root, entryPoints: modules, outdir, conditions, runtimeExternal: runtimeIsBuilt(conditions) }),
        outbase: root,
        sourcemap: 'linked',
        define: options.define ?? {},
        alias: options.alias ?? {},
      });
    } catch {
      // The build's own bundle reports what does not compile, with a better message.
      return;
    }
    const outputs = modules.map((module) => outputUrlFor(root, result.metafile, module));
    if (outputs.some((url) => url === undefined)) return;
    const report = await loadInChild(root, outputs as string[]);
    if (report === undefined) {
      log(
        `[flue] Note: the agent modules did not finish loading within ${LOAD_TIMEOUT_MS / 1000} s (a top-level await that never settles?); their definitions were not checked.`,
      );
      return;
    }
    if (report.index === undefined) return;
    const module = path.relative(root, modules[report.index]!).split(path.sep).join('/');
    const location = sourceLocation(root, report.stack ?? '');
    if (location === undefined && options.target === 'cloudflare') {
      log(
        `[flue] Note: ${module} could not be loaded on Node to check its definitions (${firstLine(report.message ?? '')}); workerd may still load it.`,
      );
      return;
    }
    throw new ModuleLoadError(module, location, report.message ?? 'unknown error', report.name ?? 'Error');
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}

/**
 * Imports the modules in order in a fresh Node process and reports the first failure. The report
 * is the last marked line of stdout, so whatever the modules print themselves is ignored.
 * Resolves undefined when the child does not finish in time.
 */
async function loadInChild(root: string, urls: string[]): Promise<ChildReport | undefined> {
  const script = [
    "import { registerHooks } from 'node:module';",
    `const standIn = ${JSON.stringify(`data:text/javascript,${encodeURIComponent(CLOUDFLARE_STAND_IN)}`)};`,
    "registerHooks({ resolve: (specifier, context, next) => specifier.startsWith('cloudflare:') ? { url: standIn, shortCircuit: true } : next(specifier, context) });",
    `const urls = ${JSON.stringify(urls)};`,
    `const marker = ${JSON.stringify(RESULT_MARKER)};`,
    "const report = (value) => process.stdout.write('\\n' + marker + JSON.stringify(value) + '\\n', () => process.exit(0));",
    'for (let index = 0; index < urls.length; index++) {',
    '  try { await import(urls[index]); }',
    '  catch (error) {',
    '    const e = error instanceof Error ? error : new Error(String(error));',
    '    report({ index, name: e.name, message: e.message, stack: String(e.stack ?? "") });',
    '    await new Promise(() => {});',
    '  }',
    '}',
    'report({});',
  ].join('\n');
  return await new Promise<ChildReport | undefined>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--enable-source-maps', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (data: Buffer) => void (stdout += data.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), LOAD_TIMEOUT_MS);
    // A Node that cannot be started is no verdict on the modules.
    child.on('error', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
    child.on('close', () => {
      clearTimeout(timer);
      const line = stdout.split('\n').findLast((l) => l.startsWith(RESULT_MARKER));
      resolve(line === undefined ? undefined : (JSON.parse(line.slice(RESULT_MARKER.length)) as ChildReport));
    });
  });
}

/**
 * Whether `@flue/runtime` resolves to built JavaScript (an installed package's dist/), which the
 * child imports in place so the runtime's own dependencies resolve from the package's directory.
 * A checkout's TypeScript sources (the `flue-source` condition) are bundled into the check
 * instead: Node would strip their types file by file, several times slower than esbuild.
 */
function runtimeIsBuilt(conditions: readonly string[]): boolean {
  return !/\.[cm]?ts$/.test(resolveRuntimeExport('@flue/runtime', conditions));
}

/** The innermost stack frame in the project's `src/` (outside node_modules), as `src/…:line:column`. */
export function sourceLocation(root: string, stack: string): string | undefined {
  const src = path.join(root, 'src') + path.sep;
  for (const line of stack.split('\n')) {
    const match = /^\s*at (?:.*\()?((?:file:\/\/)?\/[^():]+(?::[^():\d][^():]*)*):(\d+):(\d+)\)?\s*$/.exec(line);
    if (match === null) continue;
    const file = match[1]!.startsWith('file://') ? fileURLToPath(match[1]!) : match[1]!;
    if (!file.startsWith(src) || file.slice(src.length).split(path.sep).includes('node_modules')) continue;
    return `${path.relative(root, file).split(path.sep).join('/')}:${match[2]}:${match[3]}`;
  }
  return undefined;
}

/**
 * One bundling pass with the module-load check running beside it (both targets build this way).
 * A bundling error is reported first, then a load failure; what comes back are the bundle and
 * esbuild's warnings about the project's own files (dependencies and this package are outside
 * the root, and their warnings are not the user's to fix).
 */
export async function bundleBesideLoadCheck<R extends esbuild.BuildResult>(
  bundle: () => Promise<R>,
  loadCheck: LoadCheckOptions,
): Promise<{ result: R; warnings: string[] }> {
  const loading = outcome(checkModuleLoad(loadCheck));
  let result: R;
  try {
    result = await bundle();
  } catch (error) {
    await loading;
    throw new FlueBuildError('BundleError', `Bundling failed:\n${formatEsbuildError(error)}`, {}, error);
  }
  const loadFailure = await loading;
  if (loadFailure !== undefined) throw loadFailure;
  const warnings: string[] = [];
  for (const warning of result.warnings) {
    const file = warning.location?.file ?? '';
    if (file.startsWith('../') || /(?:^|\/)node_modules\//.test(file)) continue;
    warnings.push(`esbuild: ${formatMessage(warning).trim()}`);
  }
  return { result, warnings };
}

/** A promise's rejection as a value (undefined when it fulfils), for work awaited later. */
async function outcome(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
    return undefined;
  } catch (error) {
    return error ?? new Error('undefined was thrown');
  }
}

function firstLine(text: string): string {
  return text.split('\n')[0]!.replace(/^\[flue\]\s*/, '');
}

/**
 * `cloudflare:*` modules do not exist on Node. Whoever imports one (the project, or the runtime's
 * own Cloudflare entries) gets this stand-in: the names those modules export (classes to extend,
 * an `env` whose every property is again a stand-in), enough for module top level to run.
 */
const CLOUDFLARE_STAND_IN = `
const standIn = new Proxy(function () {}, {
  get: (_, key) => (key === Symbol.toPrimitive ? () => '' : key === 'then' ? undefined : standIn),
  apply: () => standIn,
  construct: () => standIn,
});
class Base { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }
export class DurableObject extends Base {}
export class WorkerEntrypoint extends Base {}
export class WorkflowEntrypoint extends Base {}
export class RpcTarget {}
export class EmailMessage {}
export class NonRetryableError extends Error {}
export const env = standIn;
export const connect = standIn;
export const waitUntil = () => {};
export const withEnv = (_env, fn) => fn();
export default standIn;
`;
