/**
 * `flue.config.{ts,mts,js,mjs}` (build-and-cli.md §4) and the project's special entry files
 * (`src/app.*`, `src/cloudflare.*`, `src/db.*`).
 */
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { FlueBuildError } from './build-errors.ts';
import { processNodeConditions, flueRuntimePlugin } from './plugins.ts';

export interface FlueConfig {
  app?: string;
  cloudflare?: string;
  db?: string;
  schedules?: string;
  agents?: string;
  providers?: string[];
  target?: BuildTarget;
}

/** Where `flue build` / `flue dev` aim: a Cloudflare Worker (default) or a Node HTTP server. */
export type BuildTarget = 'cloudflare' | 'node';
export const BUILD_TARGETS: readonly BuildTarget[] = ['cloudflare', 'node'];

/**
 * The config as the build uses it: the same fields, entries made absolute (existence checked),
 * `agents` still a scan glob relative to `src/`.
 */
export interface ResolvedConfig extends FlueConfig {
  /** Absolute path of the config file, if any. */
  file: string | undefined;
}

export const CONFIG_FILES = ['flue.config.ts', 'flue.config.mts', 'flue.config.js', 'flue.config.mjs'] as const;
export const SOURCE_EXTENSIONS = ['.ts', '.mts', '.js', '.mjs'] as const;
const CONFIG_FIELDS = ['app', 'cloudflare', 'db', 'schedules', 'agents', 'providers', 'target'] as const;
const PATH_FIELDS = ['app', 'cloudflare', 'db', 'schedules'] as const;

export function findConfigFile(root: string): string | undefined {
  for (const name of CONFIG_FILES) {
    const file = path.join(root, name);
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** Loads (bundles with esbuild, then imports) and strictly validates the project's config. */
export async function loadConfig(root: string): Promise<ResolvedConfig> {
  const file = findConfigFile(root);
  if (file === undefined) return { file: undefined };
  const label = path.basename(file);

  let bundled: esbuild.BuildResult<{ write: false }>;
  try {
    bundled = await esbuild.build({
      entryPoints: [file],
      absWorkingDir: root,
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      target: 'node22',
      packages: 'external',
      plugins: [flueRuntimePlugin({ conditions: processNodeConditions(), external: true })],
      logLevel: 'silent',
    });
  } catch (error) {
    throw new FlueBuildError('ConfigError', `Could not load ${label}:\n${formatEsbuildError(error)}`);
  }
  const code = bundled.outputFiles[0]!.contents;
  const dir = path.join(root, 'node_modules', '.cache', 'flue', 'config');
  await mkdir(dir, { recursive: true });
  const out = path.join(dir, `flue.config.${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
  await writeFile(out, code);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(out).href)) as { default?: unknown };
  } catch (error) {
    throw new FlueBuildError('ConfigError', `Could not load ${label}: ${(error as Error).message}`, {}, error);
  }
  return validateConfig(mod.default, file);
}

/** Strict validation (build-and-cli.md §4). `file` is the config's absolute path. */
export function validateConfig(value: unknown, file: string): ResolvedConfig {
  const label = path.basename(file);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FlueBuildError('ConfigError', `${label} must export a config object as the default export.`);
  }
  const config = value as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(config)) {
    if (!(CONFIG_FIELDS as readonly string[]).includes(key)) problems.push(`unknown field "${key}" (known: ${CONFIG_FIELDS.join(', ')})`);
  }
  for (const key of [...PATH_FIELDS, 'agents'] as const) {
    const v = config[key];
    if (v !== undefined && (typeof v !== 'string' || v.trim() === '')) problems.push(`"${key}" must be a non-empty string`);
  }
  const providers = config['providers'];
  if (providers !== undefined) {
    if (!Array.isArray(providers)) problems.push('"providers" must be an array of provider ids, e.g. ["anthropic"]');
    else {
      providers.forEach((id, i) => {
        if (typeof id !== 'string' || !/^[a-z0-9][a-z0-9-]*$/.test(id))
          problems.push(`"providers[${i}]" must be a provider id such as "anthropic"`);
      });
      const seen = new Set<unknown>();
      for (const id of providers) {
        if (seen.has(id)) problems.push(`"providers" lists "${String(id)}" twice`);
        seen.add(id);
      }
    }
  }
  const target = config['target'];
  if (target !== undefined && !(BUILD_TARGETS as readonly unknown[]).includes(target)) {
    problems.push(`"target" must be one of ${BUILD_TARGETS.map((t) => `"${t}"`).join(', ')}; got ${JSON.stringify(target)}`);
  }
  if (problems.length > 0) {
    throw new FlueBuildError('ConfigError', `Invalid config in ${label}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }

  const resolved: ResolvedConfig = { file };
  const dir = path.dirname(file);
  for (const key of PATH_FIELDS) {
    const v = config[key];
    if (typeof v !== 'string') continue;
    const abs = path.resolve(dir, v);
    if (!existsSync(abs) || !statSync(abs).isFile())
      throw new FlueBuildError('ConfigError', `Configured \`${key}\` entry not found: ${abs}`);
    resolved[key] = abs;
  }
  if (typeof config['agents'] === 'string') resolved.agents = config['agents'];
  if (Array.isArray(providers)) resolved.providers = [...(providers as string[])];
  if (target !== undefined) resolved.target = target as BuildTarget;
  return resolved;
}

/** The app entry every build target serves; a project without one cannot be built. */
export function requireAppEntry(root: string, config: ResolvedConfig): string {
  const app = resolveEntry(root, 'app', config);
  if (app === undefined) {
    throw new FlueBuildError(
      'NoAppEntryError',
      'No app entry found. Create src/app.ts whose default export is a Hono app or an object with a fetch(request, env, ctx) method.',
    );
  }
  return app;
}

/** `src/<name>.{ts,mts,js,mjs}`, first hit, or the configured path. */
export function resolveEntry(root: string, name: 'app' | 'cloudflare' | 'db' | 'schedules', config: ResolvedConfig): string | undefined {
  const configured = config[name];
  if (configured !== undefined) return configured;
  for (const ext of SOURCE_EXTENSIONS) {
    const file = path.join(root, 'src', `${name}${ext}`);
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** esbuild failures as `file:line:col: message` lines. */
export function formatEsbuildError(error: unknown): string {
  const errors = (error as { errors?: esbuild.Message[] }).errors;
  if (!Array.isArray(errors) || errors.length === 0) return String((error as Error).message ?? error);
  return errors.map(formatMessage).join('\n');
}

export function formatMessage(message: esbuild.Message): string {
  const loc = message.location;
  const where = loc === null ? '' : `${loc.file}:${loc.line}:${loc.column + 1}: `;
  const text = message.text.startsWith('[flue] ') ? message.text.slice(7) : message.text;
  return `  ${where}${text}`;
}
