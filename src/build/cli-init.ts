/**
 * `flue init [directory] [--template <name>] [--force] [--runtime <spec>]` (build-and-cli.md §5.2).
 *
 * The project depends on this package through an alias, `"@flue/runtime": "npm:flue-workers@^x"`,
 * so its code imports `@flue/runtime` whatever name the package is published under. Run from a
 * checkout of the repository (sources present, nothing published yet), init packs the checkout
 * into the project's vendor/ and depends on that tarball instead: the project then installs and
 * runs offline, exactly as the published package would.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PUBLISHED_NAME, packageRoot, packageVersion } from './package-root.ts';
import { FlueBuildError } from './build-errors.ts';

export const DEFAULT_TEMPLATE = 'cloudflare';
export const FALLBACK_PROJECT_NAME = 'my-flue-app';
/** The name the templates are written with; replaced by the project name in these files. */
const TEMPLATE_NAME = 'my-flue-app';
const NAMED_FILES = new Set(['package.json', 'wrangler.jsonc', 'wrangler.json', 'README.md']);

export interface InitOptions {
  /** Target directory (absolute or relative to `cwd`). */
  directory: string;
  template?: string;
  force?: boolean;
  cwd?: string;
  /** Written paths (stdout). */
  onWritten?: (displayPath: string) => void;
  /** Kept files and notes (stderr). */
  onNote?: (line: string) => void;
  /**
   * The project's `@flue/runtime` dependency, written verbatim (e.g. `npm:flue-workers@^0.2.0`).
   * Default: the published package, or a tarball packed from this checkout when run from one.
   */
  runtime?: string;
}

export interface InitResult {
  directory: string;
  projectName: string;
  written: string[];
  kept: string[];
  /** The `@flue/runtime` dependency written into package.json (undefined when it was kept). */
  runtime?: string;
}

export function templatesDir(): string {
  return path.join(packageRoot(), 'templates');
}

export function availableTemplates(): string[] {
  const dir = templatesDir();
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => !name.startsWith('.') && statSync(path.join(dir, name)).isDirectory())
    .sort();
}

/** Directory basename, lowercased, restricted to `[a-z0-9-]`; fallback `my-flue-app`. */
export function projectNameFor(directory: string): string {
  const name = path
    .basename(path.resolve(directory))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return name === '' ? FALLBACK_PROJECT_NAME : name;
}

/** `_gitignore` → `.gitignore` (npm drops dotfiles such as `.gitignore` from published packages). */
export function targetName(templateFileName: string): string {
  return templateFileName.startsWith('_') ? `.${templateFileName.slice(1)}` : templateFileName;
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await listFiles(path.join(dir, entry.name), rel)));
    else if (entry.isFile()) out.push(rel);
  }
  return out;
}

export async function initProject(options: InitOptions): Promise<InitResult> {
  const cwd = options.cwd ?? process.cwd();
  const template = options.template ?? DEFAULT_TEMPLATE;
  const templates = availableTemplates();
  if (!templates.includes(template)) {
    throw new FlueBuildError('InitError', `Unknown template "${template}". Available templates: ${templates.join(', ') || '(none)'}.`);
  }
  const source = path.join(templatesDir(), template);
  const directory = path.resolve(cwd, options.directory);
  if (existsSync(directory) && !statSync(directory).isDirectory()) {
    throw new FlueBuildError('InitError', `${options.directory} exists and is not a directory.`);
  }
  const projectName = projectNameFor(directory);
  const written: string[] = [];
  const kept: string[] = [];
  let runtime: string | undefined;

  for (const rel of await listFiles(source)) {
    const parts = rel.split('/');
    const targetRel = [...parts.slice(0, -1), targetName(parts.at(-1)!)].join('/');
    const target = path.join(directory, ...targetRel.split('/'));
    const display = path.relative(cwd, target) || target;
    if (existsSync(target) && options.force !== true) {
      kept.push(target);
      options.onNote?.(`kept existing ${display}`);
      continue;
    }
    let data: Buffer | string = await readFile(path.join(source, ...parts));
    if (parts.length === 1 && NAMED_FILES.has(targetRel)) data = withProjectName(data.toString('utf8'), projectName);
    if (targetRel === 'package.json') {
      runtime = options.runtime ?? (await runtimeDependency(directory, cwd, options));
      data = withRuntime(String(data), runtime);
    }
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, data);
    written.push(target);
    options.onWritten?.(display);
  }
  return { directory, projectName, written, kept, ...(runtime === undefined ? {} : { runtime }) };
}

/** The published package, e.g. `npm:flue-workers@^0.2.0`. */
export function publishedRuntime(): string {
  return `npm:${PUBLISHED_NAME}@^${packageVersion()}`;
}

/** A checkout has the TypeScript sources; the published package ships only dist/. */
export function runningFromCheckout(): boolean {
  return existsSync(path.join(packageRoot(), 'src', 'build', 'cli.ts'));
}

async function runtimeDependency(directory: string, cwd: string, options: InitOptions): Promise<string> {
  if (!runningFromCheckout()) return publishedRuntime();
  const vendor = path.join(directory, 'vendor');
  await mkdir(vendor, { recursive: true });
  const tarball = packCheckout(vendor);
  options.onWritten?.(path.relative(cwd, tarball) || tarball);
  options.onNote?.(
    `packed this checkout into ${path.relative(cwd, tarball) || tarball}; the project installs it from there (its README says how to switch to the published package)`,
  );
  return `file:./vendor/${path.basename(tarball)}`;
}

/** `npm pack` of this checkout into `destination` (its prepack builds dist/ and the declarations). */
function packCheckout(destination: string): string {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const run = spawnSync(npm, ['pack', '--pack-destination', destination, '--no-fund', '--no-audit'], {
    cwd: packageRoot(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tarball = path.join(destination, `${PUBLISHED_NAME}-${packageVersion()}.tgz`);
  if (run.status !== 0 || !existsSync(tarball)) {
    throw new FlueBuildError(
      'InitError',
      `npm pack of ${packageRoot()} failed${run.error ? ` (${run.error.message})` : ''}:\n${run.stdout ?? ''}${run.stderr ?? ''}`,
    );
  }
  return tarball;
}

/** Replaces the template's `"@flue/runtime": "…"` dependency. */
function withRuntime(text: string, spec: string): string {
  return text.replace(/"@flue\/runtime": "[^"]*"/, `"@flue/runtime": ${JSON.stringify(spec)}`);
}

/** Replaces the template's `"name": "my-flue-app"` (and a README's `# my-flue-app` title), first occurrence. */
function withProjectName(text: string, name: string): string {
  return text
    .replace(`"name": "${TEMPLATE_NAME}"`, `"name": ${JSON.stringify(name)}`)
    .replace(new RegExp(`^# ${TEMPLATE_NAME}$`, 'm'), `# ${name}`);
}
