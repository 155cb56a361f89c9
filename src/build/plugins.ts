/**
 * esbuild plugins shared by the Worker build and `flue run` (build-and-cli.md §1.4, §2.1, §3.3).
 */
import { lstat, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BuildOptions, Metafile, OnLoadResult, Plugin } from 'esbuild';
import { resolveRuntimeExport, runtimeSubpath } from './package-root.ts';
import type { ScannedModule } from './scan-types.ts';
import { createSkillReference, readSkillMarkdown, skillIssuesMessage, type SkillReference } from '../shared/skill-format.ts';
import { readYamlFrontmatter } from './skill-frontmatter.ts';
import { FlueBuildError } from './build-errors.ts';
import { ENTER_AGENT_LOCAL, guardAgentModule } from './agent-guard.ts';
import { scanModule } from './scan.ts';

export const WORKER_CONDITIONS = ['workerd', 'worker', 'browser', 'import', 'default'] as const;
export const NODE_CONDITIONS = ['node', 'import', 'default'] as const;

/** The `--conditions` / `-C` flags of this Node process (tests add `flue-source`). */
function processConditionFlags(): string[] {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)];
  const extra: string[] = [];
  flags.forEach((flag, i) => {
    if (flag.startsWith('--conditions=')) extra.push(flag.slice('--conditions='.length));
    else if ((flag === '--conditions' || flag === '-C') && flags[i + 1] !== undefined) extra.push(flags[i + 1]!);
  });
  return extra;
}

/**
 * The conditions this Node process resolves packages with: NODE_CONDITIONS plus any
 * `--conditions` / `-C` flags (tests add `flue-source`). `flue run` bundles agent modules with
 * `@flue/runtime` left external, so the agent must resolve to the copy the CLI itself imported.
 */
export function processNodeConditions(): readonly string[] {
  return [...processConditionFlags(), ...NODE_CONDITIONS];
}

/**
 * The conditions a Worker build resolves `@flue/runtime` with: WORKER_CONDITIONS (the built
 * dist/*.js) plus the process's own flags, so this repository's tests bundle src/ (`flue-source`)
 * and can never pass against a stale build.
 */
export function workerRuntimeConditions(): readonly string[] {
  return [...processConditionFlags(), ...WORKER_CONDITIONS];
}

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
 * `cloudflare:*` imports stay in the output as they are: a Node bundle names them in its import
 * chain errors (metafile), and the definition check's child answers them with a stand-in.
 */
export function cloudflareExternalPlugin(): Plugin {
  return {
    name: 'flue-cloudflare-external',
    setup(build) {
      build.onResolve({ filter: /^cloudflare:/ }, (args) => ({ path: args.path, external: true }));
    },
  };
}

/**
 * esbuild settings that bundle project modules for a Node process to import (`flue run`, the
 * build's definition check): the project's sources bundled, packages left to Node, `@flue/runtime`
 * resolved with `conditions` (left external as a `file:` URL when `runtimeExternal`).
 */
export function nodeModulesBuildOptions(options: {
  root: string;
  entryPoints: readonly string[];
  outdir: string;
  conditions: readonly string[];
  runtimeExternal: boolean;
}): BuildOptions & { metafile: true; plugins: Plugin[] } {
  return {
    entryPoints: [...options.entryPoints],
    absWorkingDir: options.root,
    outdir: options.outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    packages: 'external',
    keepNames: true,
    metafile: true,
    logLevel: 'silent',
    loader: { '.md': 'text' },
    plugins: [
      flueRuntimePlugin({ conditions: options.conditions, external: options.runtimeExternal }),
      markdownPlugin(),
      cloudflareExternalPlugin(),
    ],
  };
}

/** The `file:` URL of the output esbuild wrote for the entry point `entry` (absolute), if any. */
export function outputUrlFor(root: string, metafile: Metafile, entry: string): string | undefined {
  const rel = path.relative(root, entry).split(path.sep).join('/');
  const out = Object.entries(metafile.outputs).find(([, o]) => o.entryPoint === rel)?.[0];
  return out === undefined ? undefined : pathToFileURL(path.resolve(root, out)).href;
}

/**
 * `.md` imports (build-and-cli.md §2.1): `import text from './x.md'` → the file's text.
 * Rejects import queries, legacy import attributes and dynamic imports of `SKILL.md`. A static
 * `SKILL.md` import packages its whole directory into a generated module whose default export is
 * the skill's `SkillReference` (see `packageSkillDirectory`).
 */
export function markdownPlugin(): Plugin {
  return {
    name: 'flue-markdown',
    setup(build) {
      build.onResolve({ filter: /\.md(?:\?.*)?$/i }, async (args) => {
        const query = args.path.indexOf('?');
        if (query !== -1) {
          return {
            errors: [
              {
                text: `[flue] Import queries are not supported on .md imports ("${args.path}"). Use a plain import: import text from '${args.path.slice(0, query)}'.`,
              },
            ],
          };
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
        if (isSkill && args.pluginData?.[SKILL_RESOLVE] !== true) {
          // Default resolution (relative, absolute or package paths), then our namespace.
          const resolved = await build.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            namespace: args.namespace,
            pluginData: { [SKILL_RESOLVE]: true },
          });
          if (resolved.errors.length > 0) return { errors: resolved.errors };
          return { path: resolved.path, namespace: SKILL_NAMESPACE };
        }
        return undefined; // plain .md: default resolution, loaded as text (loader below)
      });
      build.onLoad({ filter: /.*/, namespace: SKILL_NAMESPACE }, async (args) => {
        const dir = path.dirname(args.path);
        let packaged: PackagedSkillDirectory;
        try {
          packaged = await packageSkillDirectory(dir);
        } catch (error) {
          return { errors: [{ text: (error as Error).message }], watchDirs: [dir], watchFiles: [args.path] };
        }
        return {
          contents: skillModuleSource(packaged.reference),
          loader: 'js',
          warnings: packaged.warnings.map((text) => ({ text })),
          watchFiles: packaged.watchFiles,
          watchDirs: packaged.watchDirs,
        };
      });
    },
  };
}

const SKILL_NAMESPACE = 'flue-skill';
const SKILL_RESOLVE = 'flueSkillResolve';

/** Directories skipped with a warning: tooling output and VCS state, never skill content. */
const EXCLUDED_DIRS = new Set(['.git', '.cache', '.turbo', '.wrangler', 'dist', 'node_modules']);
/** Directories that hold credentials: packaging one is an error. */
const SENSITIVE_DIRS = new Set(['.aws', '.gnupg', '.ssh']);
const SENSITIVE_FILES = new Set(['.netrc', '_netrc', '.npmrc', '.pypirc', 'credentials.json']);
const SENSITIVE_FILE_PATTERN = /^(?:\.env(?:\..*)?|\.dev\.vars.*|.*\.(?:key|pem|p12|pfx)|secrets?(?:\..*)?)$/;
const JUNK_FILE_PATTERN = /^(?:\.DS_Store|.*\.swp|.*\.swo|.*~)$/;
export const SKILL_FILE_WARN_BYTES = 1024 * 1024;

export interface PackagedSkillDirectory {
  reference: SkillReference;
  warnings: string[];
  watchFiles: string[];
  watchDirs: string[];
}

/**
 * Packages a skill directory (build-and-cli.md §2.1): every file, recursively and sorted, keyed by
 * `/`-separated relative path. Symlinks and credential-like files are errors (all are reported
 * together); tooling directories and editor junk are skipped with a warning; files over 1 MiB
 * are packaged with a warning. `SKILL.md` frontmatter is validated (its `name` must equal the
 * directory name).
 */
export async function packageSkillDirectory(dir: string): Promise<PackagedSkillDirectory> {
  const label = (rel: string) => path.join(path.basename(dir), ...rel.split('/'));
  const errors: string[] = [];
  const warnings: string[] = [];
  const files: Record<string, Uint8Array> = {};
  const watchFiles: string[] = [];
  const watchDirs: string[] = [dir];

  const walk = async (abs: string, rel: string): Promise<void> => {
    const entries = (await readdir(abs)).sort();
    for (const entry of entries) {
      const entryAbs = path.join(abs, entry);
      const entryRel = rel === '' ? entry : `${rel}/${entry}`;
      const stat = await lstat(entryAbs);
      const lower = entry.toLowerCase();
      if (stat.isSymbolicLink()) {
        errors.push(
          `"${label(entryRel)}" is a symlink. Skill directories are packaged as plain files; replace the link with the file itself.`,
        );
      } else if (stat.isDirectory()) {
        if (SENSITIVE_DIRS.has(lower)) {
          errors.push(
            `"${label(entryRel)}/" looks like a credentials directory and must not be packaged into the bundle. Move it out of the skill directory.`,
          );
        } else if (EXCLUDED_DIRS.has(entry)) {
          warnings.push(
            `[flue] Skipping "${label(entryRel)}/" while packaging skill "${path.basename(dir)}" (${entry} is never skill content).`,
          );
        } else {
          watchDirs.push(entryAbs);
          await walk(entryAbs, entryRel);
        }
      } else if (stat.isFile()) {
        if (SENSITIVE_FILES.has(lower) || SENSITIVE_FILE_PATTERN.test(lower)) {
          errors.push(
            `"${label(entryRel)}" looks like a secret or credential file and must not be packaged into the bundle. Move it out of the skill directory.`,
          );
        } else if (JUNK_FILE_PATTERN.test(entry)) {
          warnings.push(`[flue] Skipping "${label(entryRel)}" while packaging skill "${path.basename(dir)}" (editor or OS junk file).`);
        } else {
          if (stat.size > SKILL_FILE_WARN_BYTES) {
            warnings.push(
              `[flue] "${label(entryRel)}" is ${(stat.size / 1024 / 1024).toFixed(1)} MiB; large skill files grow the Worker bundle.`,
            );
          }
          files[entryRel] = new Uint8Array(await readFile(entryAbs));
          watchFiles.push(entryAbs);
        }
      }
      // Sockets, FIFOs and devices are not files a skill can ship: ignored.
    }
  };
  await walk(dir, '');
  if (errors.length > 0) {
    throw new FlueBuildError('SkillPackagingError', `Cannot package skill directory ${dir}:\n${errors.map((e) => `  - ${e}`).join('\n')}`);
  }
  const skillMd = files['SKILL.md'];
  if (skillMd === undefined) throw new FlueBuildError('SkillPackagingError', `${path.join(dir, 'SKILL.md')} not found.`);
  const read = readSkillMarkdown(new TextDecoder().decode(skillMd), readYamlFrontmatter, {
    directoryName: path.basename(dir),
    source: path.join(dir, 'SKILL.md'),
  });
  if (!read.ok) throw new FlueBuildError('SkillPackagingError', `${skillIssuesMessage(read.subject, read.issues)}`);
  const fields = read.fields;
  return { reference: createSkillReference(fields, files), warnings, watchFiles, watchDirs };
}

/** The generated module for a packaged skill: its frozen `SkillReference` as the default export. */
export function skillModuleSource(reference: SkillReference): string {
  return [
    '// Generated by flue: a packaged skill directory (SKILL.md import).',
    'const freeze = (value) => {',
    "  for (const inner of Object.values(value)) if (typeof inner === 'object' && inner !== null) freeze(inner);",
    '  return Object.freeze(value);',
    '};',
    `export default freeze(${JSON.stringify(reference)});`,
    '',
  ].join('\n');
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
        return guardedModule(args.path, source, scanned, agentBindingFooter(scanned));
      });
    },
  };
}

/**
 * For `flue run`, which bundles without a project scan: every agent module it loads gets the
 * re-entrancy guard (agent-guard.ts), found by scanning each file that mentions `use agent`.
 */
export function agentGuardPlugin(): Plugin {
  return {
    name: 'flue-agent-guard',
    setup(build) {
      const root = build.initialOptions.absWorkingDir ?? process.cwd();
      build.onLoad({ filter: /\.(?:[cm]?[jt]s)$/ }, async (args) => {
        // The project's own modules only (relative to its root: the project may itself sit in a
        // node_modules folder, as test projects do).
        if (args.namespace !== 'file' || /(?:^|[\\/])node_modules[\\/]/.test(path.relative(root, args.path))) return undefined;
        const source = await readFile(args.path, 'utf8');
        if (!source.includes('use agent')) return undefined;
        const scanned = await scanModule(args.path, source);
        if (scanned === undefined) return undefined;
        return guardedModule(
          args.path,
          source,
          scanned,
          `\n;\nimport { __flueEnterAgent as ${ENTER_AGENT_LOCAL} } from '@flue/runtime';\n`,
        );
      });
    },
  };
}

async function guardedModule(file: string, source: string, scanned: ScannedModule, footer: string): Promise<OnLoadResult> {
  const guarded = await guardAgentModule(
    file,
    source,
    scanned.agents.map((agent) => agent.exportName),
  );
  // The footer goes before the inline source map comment, which stays the module's last line.
  const mapAt = guarded.lastIndexOf('\n//# sourceMappingURL=');
  const contents = mapAt === -1 ? guarded + footer : guarded.slice(0, mapAt) + footer + guarded.slice(mapAt);
  return { contents, loader: 'js', resolveDir: path.dirname(file) };
}

export function agentBindingFooter(scanned: ScannedModule): string {
  const lines = [
    '',
    ';',
    `import { __flueBindAgentModule as __flue_bind__, __flueEnterAgent as ${ENTER_AGENT_LOCAL} } from '@flue/runtime';`,
    `import * as __flue_self__ from ${JSON.stringify(scanned.file)};`,
    ...scanned.agents.map(
      (a) => `__flue_bind__(__flue_self__[${JSON.stringify(a.exportName)}], { identity: ${JSON.stringify(a.identity)} });`,
    ),
    '',
  ];
  return lines.join('\n');
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
