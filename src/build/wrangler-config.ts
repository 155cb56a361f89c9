/**
 * The user's wrangler file: lookup, validation, migration checks and the merged
 * `.flue.wrangler.json` (cloudflare.md §3). The user's file is only ever read.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isPlainObject } from '../shared/values.ts';
import { FlueBuildError } from './build-errors.ts';
import { packageRoot } from './package-root.ts';
import { CHUNKS_DIR } from './worker-split.ts';

/** The generated names of one agent (cloudflare.md §2). */
export interface GeneratedAgent {
  identity: string;
  className: string;
  bindingName: string;
}

export type RawWranglerConfig = Record<string, unknown>;

export interface UserWranglerConfig {
  /** Absolute path of `wrangler.jsonc` / `wrangler.json`. */
  path: string;
  /** Its basename, used in messages. */
  label: string;
  raw: RawWranglerConfig;
}

/** The ref floor for SQLite-backed Durable Objects and AsyncLocalStorage (cloudflare.md §3.1). */
export const MIN_COMPATIBILITY_DATE = '2026-04-01';
export const GENERATED_CONFIG_FILE = '.flue.wrangler.json';
export const DEPLOY_REDIRECT_FILE = path.join('.wrangler', 'deploy', 'config.json');
export const DEPLOY_REDIRECT_CONTENT = `${JSON.stringify({ configPath: '../../.flue.wrangler.json' }, null, 2)}\n`;

/** Keys that only make sense when wrangler bundles; we bundle (cloudflare.md §3.1). */
export const FORBIDDEN_KEYS = ['main', 'no_bundle', 'find_additional_modules', 'rules', 'base_dir'] as const;

function fail(message: string): never {
  throw new FlueBuildError('WranglerConfigError', message);
}

/** `wrangler.jsonc`, else `wrangler.json`; a `wrangler.toml` alone fails. */
export function findWranglerConfig(root: string): { path: string; label: string } {
  for (const name of ['wrangler.jsonc', 'wrangler.json']) {
    const file = path.join(root, name);
    if (existsSync(file)) return { path: file, label: name };
  }
  if (existsSync(path.join(root, 'wrangler.toml'))) fail('wrangler.toml is not supported; use wrangler.jsonc.');
  fail(
    `No wrangler config found in ${root}. Create wrangler.jsonc with "name", "compatibility_date" ` +
      `(${MIN_COMPATIBILITY_DATE} or later), "compatibility_flags": ["nodejs_compat"] and "migrations".`,
  );
}

interface WranglerModule {
  experimental_readRawConfig?: (args: { config?: string }) => { rawConfig: unknown };
}

let wranglerModule: Promise<WranglerModule> | undefined;

/**
 * wrangler's own JSONC reader (`experimental_readRawConfig`), from the project's wrangler if it
 * has one that exports it, else ours. Loaded lazily: importing wrangler takes about a second.
 */
async function loadWranglerReader(root: string): Promise<NonNullable<WranglerModule['experimental_readRawConfig']>> {
  wranglerModule ??= (async () => {
    for (const base of [root, packageRoot()]) {
      let entry: string;
      try {
        entry = createRequire(path.join(base, 'package.json')).resolve('wrangler');
      } catch {
        continue;
      }
      const mod = (await import(pathToFileURL(entry).href)) as WranglerModule & { default?: WranglerModule };
      if (typeof mod.experimental_readRawConfig === 'function') return mod;
      if (typeof mod.default?.experimental_readRawConfig === 'function') return mod.default;
    }
    return {};
  })();
  const reader = (await wranglerModule).experimental_readRawConfig;
  if (reader === undefined) fail('Could not load wrangler to read the wrangler config. Install it: npm install -D wrangler');
  return reader;
}

/** Finds and parses the user's wrangler file (JSONC: comments and trailing commas allowed). */
export async function readWranglerConfig(root: string): Promise<UserWranglerConfig> {
  const found = findWranglerConfig(root);
  const read = await loadWranglerReader(root);
  let raw: unknown;
  try {
    // An explicit path: wrangler must not follow our own .wrangler/deploy redirect here.
    raw = read({ config: found.path }).rawConfig;
  } catch (error) {
    const e = error as { message?: string; location?: { line?: number; column?: number } };
    const at = e.location?.line === undefined ? '' : ` (line ${e.location.line}, column ${(e.location.column ?? 0) + 1})`;
    fail(`Could not parse ${found.label}: ${e.message ?? String(error)}${at}.`);
  }
  if (!isPlainObject(raw)) fail(`${found.label} must contain a JSON object.`);
  return { ...found, raw };
}

/**
 * `triggers.crons` of the user's wrangler file, for the Node server, which fires `app.ts`'s
 * `scheduled` handler on them as Cloudflare does. No wrangler file (a Node-only project) or no
 * crons: none.
 */
export async function declaredCrons(root: string): Promise<string[]> {
  const file = ['wrangler.jsonc', 'wrangler.json'].map((name) => path.join(root, name)).find((candidate) => existsSync(candidate));
  if (file === undefined) return [];
  // Parsing JSONC loads wrangler (about a second): skip it for a file that cannot declare crons.
  if (!readFileSync(file, 'utf8').includes('crons')) return [];
  const { raw, label } = await readWranglerConfig(root);
  const triggers = raw['triggers'];
  if (triggers === undefined) return [];
  if (!isPlainObject(triggers)) fail(`${label} "triggers" must be an object, e.g. "triggers": { "crons": ["0 9 * * *"] }.`);
  const crons = triggers['crons'];
  if (crons === undefined) return [];
  if (!Array.isArray(crons) || !crons.every((cron): cron is string => typeof cron === 'string')) {
    fail(`${label} "triggers.crons" must be an array of cron expression strings, e.g. ["0 9 * * *"].`);
  }
  return crons;
}

function envBlocks(raw: RawWranglerConfig, label: string): [string, Record<string, unknown>][] {
  if (raw['env'] === undefined) return [];
  if (!isPlainObject(raw['env'])) fail(`${label} "env" must be an object of named environments.`);
  return Object.entries(raw['env']).map(([name, block]) => {
    if (!isPlainObject(block)) fail(`${label} env "${name}" must be an object.`);
    return [name, block];
  });
}

function doBindings(block: Record<string, unknown>, where: string): Record<string, unknown>[] {
  const dos = block['durable_objects'];
  if (dos === undefined) return [];
  if (!isPlainObject(dos)) fail(`${where} "durable_objects" must be an object with a "bindings" array.`);
  const bindings = dos['bindings'];
  if (bindings === undefined) return [];
  if (!Array.isArray(bindings)) fail(`${where} "durable_objects.bindings" must be an array.`);
  return bindings.map((b) => (isPlainObject(b) ? b : {}));
}

/**
 * cloudflare.md §3.1: required keys, forbidden keys and reserved Durable Object bindings, at the
 * top level and in every `env.<name>`. Throws the first problem found.
 */
export function validateWranglerConfig(raw: RawWranglerConfig, label: string, agents: readonly GeneratedAgent[]): void {
  if (typeof raw['name'] !== 'string' || raw['name'].trim() === '') fail(`${label} must set "name" (the Worker name).`);
  checkCompatibilityDate(raw['compatibility_date'], label, true);
  checkCompatibilityFlags(raw['compatibility_flags'], label, true);

  const envs = envBlocks(raw, label);
  for (const [name, block] of envs) {
    checkCompatibilityDate(block['compatibility_date'], `${label} env "${name}"`, false);
    checkCompatibilityFlags(block['compatibility_flags'], `${label} env "${name}"`, false);
  }

  for (const [where, block] of [[label, raw] as const, ...envs.map(([name, block]) => [`${label} env "${name}"`, block] as const)]) {
    const present = FORBIDDEN_KEYS.filter((key) => Object.hasOwn(block, key));
    if (present.length > 0) {
      fail(
        `${where} must not set ${present.map((k) => `"${k}"`).join(', ')}: flue build bundles the Worker itself ` +
          '(its output is dist/worker.js; use "define"/"alias" for build-time substitutions). Remove ' +
          (present.length === 1 ? 'it.' : 'them.'),
      );
    }
  }

  const generatedClasses = new Set(agents.map((a) => a.className));
  for (const [where, block] of [[label, raw] as const, ...envs.map(([name, block]) => [`${label} env "${name}"`, block] as const)]) {
    for (const binding of doBindings(block, where)) {
      const name = typeof binding['name'] === 'string' ? binding['name'] : undefined;
      const cls = typeof binding['class_name'] === 'string' ? binding['class_name'] : undefined;
      if ((name !== undefined && name.startsWith('FLUE_')) || (cls !== undefined && generatedClasses.has(cls))) {
        fail(
          `wrangler config durable object binding "${name ?? cls}" is reserved by Flue. ` +
            `Flue adds the bindings of its agent classes to ${GENERATED_CONFIG_FILE} itself; remove this one from ${where}` +
            ' (bindings named FLUE_* and the generated Flue*Agent classes are reserved).',
        );
      }
    }
  }

  if (!Array.isArray(raw['migrations'])) {
    fail(
      `${label} must declare "migrations", the append-only history of your Durable Object classes. Start with:\n` +
        `  "migrations": [${inlineJson({ tag: 'v1', new_sqlite_classes: agents.map((a) => a.className) })}]`,
    );
  }
}

function checkCompatibilityDate(value: unknown, where: string, required: boolean): void {
  if (value === undefined && !required) return;
  if (value === undefined) fail(`${where} must set "compatibility_date" to "${MIN_COMPATIBILITY_DATE}" or later.`);
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    fail(`${where} "compatibility_date" must be a "YYYY-MM-DD" string; got ${JSON.stringify(value)}.`);
  }
  if (value < MIN_COMPATIBILITY_DATE) {
    fail(
      `${where} "compatibility_date" is "${value}"; Flue needs "${MIN_COMPATIBILITY_DATE}" or later ` +
        '(SQLite-backed Durable Objects, AsyncLocalStorage). Update it (flue never changes it for you).',
    );
  }
}

function checkCompatibilityFlags(value: unknown, where: string, required: boolean): void {
  if (value === undefined && !required) return;
  if (!Array.isArray(value) || !value.includes('nodejs_compat')) {
    fail(
      required
        ? `${where} "compatibility_flags" must include "nodejs_compat".`
        : `${where} overrides "compatibility_flags" without "nodejs_compat"; include it.`,
    );
  }
}

// ── Migrations (cloudflare.md §3.3) ─────────────────────────────────────────────────────────────

type ClassKind = 'sqlite' | 'kv' | 'unknown';

interface MigrationState {
  /** Classes alive after the whole history, with their storage kind. */
  live: Map<string, ClassKind>;
  /** Classes deleted (and not re-introduced), with the deleting tag. */
  deleted: Map<string, string>;
  tags: string[];
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function walkMigrations(migrations: readonly unknown[]): MigrationState {
  const live = new Map<string, ClassKind>();
  const deleted = new Map<string, string>();
  const tags: string[] = [];
  for (const migration of migrations) {
    if (!isPlainObject(migration)) continue;
    const tag = typeof migration['tag'] === 'string' ? migration['tag'] : '';
    tags.push(tag);
    for (const cls of strings(migration['new_sqlite_classes'])) {
      live.set(cls, 'sqlite');
      deleted.delete(cls);
    }
    for (const cls of strings(migration['new_classes'])) {
      live.set(cls, 'kv');
      deleted.delete(cls);
    }
    for (const key of ['renamed_classes', 'transferred_classes'] as const) {
      const entries = migration[key];
      if (!Array.isArray(entries)) continue;
      for (const entry of entries) {
        if (!isPlainObject(entry) || typeof entry['to'] !== 'string') continue;
        const from = typeof entry['from'] === 'string' ? entry['from'] : undefined;
        const kind = (from !== undefined && live.get(from)) || 'unknown';
        if (from !== undefined && key === 'renamed_classes') live.delete(from);
        live.set(entry['to'], kind);
        deleted.delete(entry['to']);
      }
    }
    for (const cls of strings(migration['deleted_classes'])) {
      live.delete(cls);
      deleted.set(cls, tag);
    }
  }
  return { live, deleted, tags };
}

/** The next tag after the user's: `vN+1` when every tag is `v<number>`, else `v<count+1>`. */
export function nextMigrationTag(tags: readonly string[]): string {
  const numbers = tags.map((t) => /^v(\d+)$/.exec(t)?.[1]);
  let next = numbers.every((n) => n !== undefined) ? Math.max(0, ...numbers.map(Number)) + 1 : tags.length + 1;
  while (tags.includes(`v${next}`)) next++;
  return `v${next}`;
}

const FLUE_CLASS = /^Flue[A-Za-z0-9]*Agent$/;

/**
 * Every generated class must be alive and SQLite-backed after the user's migration history:
 * missing → error with a paste-ready entry; `new_classes` → error; a `Flue*Agent` class still alive
 * that no agent generates (and no user binding uses) → error that names the likely causes first
 * and `deleted_classes` last, with what it destroys. Returns the warnings (none today; the
 * signature stays for callers that log them).
 */
export function checkMigrations(raw: RawWranglerConfig, label: string, agents: readonly GeneratedAgent[]): string[] {
  const migrations = Array.isArray(raw['migrations']) ? raw['migrations'] : [];
  const state = walkMigrations(migrations);
  const generated = new Set(agents.map((a) => a.className));
  const userClasses = new Set<string>();
  for (const block of [raw, ...envBlocks(raw, label).map(([, b]) => b)]) {
    for (const binding of doBindings(block, label)) if (typeof binding['class_name'] === 'string') userClasses.add(binding['class_name']);
  }
  const stale = [...state.live.keys()].filter((cls) => FLUE_CLASS.test(cls) && !generated.has(cls) && !userClasses.has(cls)).sort();
  const nextTag = nextMigrationTag(state.tags);

  const kv = agents.filter((a) => state.live.get(a.className) === 'kv');
  if (kv.length > 0) {
    const names = kv.map((a) => `"${a.className}"`).join(', ');
    fail(
      `${names} ${kv.length === 1 ? 'is' : 'are'} declared under "new_classes" in the ${label} migrations, but Flue agents ` +
        'need SQLite-backed Durable Objects ("new_sqlite_classes"). A deployed KV-backed class cannot be converted in place; ' +
        'if it was never deployed, change that migration to "new_sqlite_classes".',
    );
  }

  const missing = agents.filter((a) => !state.live.has(a.className));
  if (missing.length > 0) {
    const list = missing.map((a) => `"${a.className}" (agent "${a.identity}")`).join(', ');
    const snippet = inlineJson({ tag: nextTag, new_sqlite_classes: missing.map((a) => a.className) });
    let message =
      `${missing.length === 1 ? 'Durable Object class' : 'Durable Object classes'} ${list} ${missing.length === 1 ? 'is' : 'are'} ` +
      `not introduced by the migrations in ${label}. Append this entry to "migrations":\n  ${snippet}`;
    const deletedNotes = missing.filter((a) => state.deleted.has(a.className));
    for (const a of deletedNotes)
      message += `\n(${a.className} was deleted by migration "${state.deleted.get(a.className)}"; re-adding it starts with empty storage.)`;
    if (missing.length === 1 && stale.length === 1) {
      const rename = { tag: nextTag, renamed_classes: [{ from: stale[0], to: missing[0]!.className }] };
      message +=
        `\nIf agent "${missing[0]!.identity}" is ${stale[0]} renamed, keep its data without a migration by giving it the old ` +
        `identity (its agentName static set to the old identity, e.g. "${identityOf(stale[0]!)}"), or with this entry instead:\n  ${inlineJson(rename)}`;
    }
    fail(message);
  }

  if (stale.length > 0) fail(staleClassesMessage(stale, label, nextTag));
  return [];
}

/** `SupportChat` → `support-chat`: the other spelling that maps to the same class. */
function kebab(identity: string): string {
  return identity.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

/** The identity a generated class name came from, in its PascalCase spelling (`FlueOldAgent` → `Old`). */
function identityOf(cls: string): string {
  return cls.slice('Flue'.length, -'Agent'.length);
}

/**
 * A Flue class the migrations keep alive but no agent generates: its agent vanished from the
 * scan. Deploying would leave a migrated class with no code (wrangler dev fails on it), and the
 * usual cause is a module that lost its 'use agent' directive or a renamed function, where the
 * data should be kept. So this is an error, and deleting is offered last, with its cost.
 */
function staleClassesMessage(stale: readonly string[], label: string, nextTag: string): string {
  const list = stale.map((cls) => `"${cls}" (agent "${identityOf(cls)}")`).join(', ');
  const one = stale.length === 1;
  const example = identityOf(stale[0]!);
  return (
    `${label} migrations declare the Durable Object ${one ? 'class' : 'classes'} ${list}, but no agent generates ` +
    `${one ? 'it' : 'them'} any more, so ${one ? "that agent's" : "those agents'"} stored conversations would have no code to run.\n` +
    `- If the agent still exists, check its module: 'use agent' must be the very first statement, and the agent an exported ` +
    'function with a capitalized name.\n' +
    `- If you renamed the function, keep its data by giving it the old identity: NewName.agentName = '${example}'` +
    `${kebab(example) === example ? '' : ` (or '${kebab(example)}', whichever spelling the agent had)`}. ` +
    'Nothing is migrated and every conversation stays.\n' +
    `- Only if the agent is gone for good, append ${inlineJson({ tag: nextTag, deleted_classes: [...stale] })} to "migrations". ` +
    `This permanently destroys every stored conversation of ${one ? 'that agent' : 'those agents'}; it cannot be undone.`
  );
}

/** One-line JSON the way it is pasted into JSONC: `{ "tag": "v2", "new_sqlite_classes": ["X"] }`. */
export function inlineJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inlineJson).join(', ')}]`;
  if (isPlainObject(value))
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${inlineJson(v)}`)
      .join(', ')} }`;
  return JSON.stringify(value);
}

// ── The generated config (cloudflare.md §3.2) ───────────────────────────────────────────────────

/**
 * The user's config, deep-copied, `$schema` dropped, plus `main`, `no_bundle`, the rule that uploads
 * the chunks beside `main`, and the generated
 * Durable Object bindings (after the user's, sorted by identity) at the top level and in every
 * `env.<name>` (environments do not inherit DO bindings). Migrations stay as authored.
 */
export function mergeWranglerConfig(raw: RawWranglerConfig, agents: readonly GeneratedAgent[]): RawWranglerConfig {
  const copy = structuredClone(raw);
  delete copy['$schema'];
  const ours = [...agents]
    .sort((a, b) => (a.identity < b.identity ? -1 : a.identity > b.identity ? 1 : 0))
    .map((a) => ({ name: a.bindingName, class_name: a.className }));

  const withBindings = (block: Record<string, unknown>): void => {
    if (ours.length === 0) return;
    const dos = isPlainObject(block['durable_objects']) ? block['durable_objects'] : {};
    const user = Array.isArray(dos['bindings']) ? dos['bindings'] : [];
    block['durable_objects'] = { ...dos, bindings: [...user, ...structuredClone(ours)] };
  };

  copy['main'] = 'dist/worker.js';
  copy['no_bundle'] = true;
  // The split build's other modules (worker-split.ts); their source maps stay local.
  copy['find_additional_modules'] = true;
  copy['rules'] = [{ type: 'ESModule', globs: [`${CHUNKS_DIR}/*.js`] }];
  withBindings(copy);
  if (isPlainObject(copy['env'])) {
    for (const block of Object.values(copy['env'])) if (isPlainObject(block)) withBindings(block);
  }
  return copy;
}

/** Stable bytes for the generated config: two-space JSON, trailing newline. */
export function serializeWranglerConfig(config: RawWranglerConfig): string {
  return `${JSON.stringify(config, null, 2)}\n`;
}
