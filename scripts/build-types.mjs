// Emits the declarations of every export into dist/types/ (run by `npm pack` through "prepack"),
// so a project type-checks against .d.ts files with `skipLibCheck: false` and never compiles our
// sources. The pinned TypeScript 7 (native tsc) emits declarations itself; no second tool needed.
//
// Two passes, because the entries are written against two different sets of globals: the runtime,
// Node and testing entries against Node's, the Cloudflare entries against the Workers runtime's
// (the same split as tsconfig.json / tsconfig.workers.json). Relative specifiers are written as
// `./x.ts` in the sources; the emitted files say `./x.js`, which every resolution mode maps to
// `./x.d.ts` (a `.ts` specifier would need `allowImportingTsExtensions` in the user's project).
//
// Then it checks what a project gets (checkDeclarations): every entry's declarations, with each
// `.d.ts` they reach type-checked (`skipLibCheck: false`), must compile against the globals of
// where the entry runs, and load nothing of pi-ai's types or Node's. pi-ai's types bring in its
// provider SDKs' and, through them, @types/node, whose globals clash with the Workers runtime's;
// the runtime declares the pi-ai shapes it exposes itself (src/runtime/model/model-types.ts).
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = path.join(root, 'dist', 'types');
// The package's exports hide bin/tsc; its manifest locates it.
const tsc = path.join(path.dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');

const COMMON = [
  '--declaration',
  '--emitDeclarationOnly',
  '--rootDir',
  'src',
  '--target',
  'ES2023',
  '--module',
  'ESNext',
  '--moduleResolution',
  'bundler',
  '--allowImportingTsExtensions',
  '--verbatimModuleSyntax',
  '--strict',
  '--skipLibCheck',
  '--customConditions',
  'flue-source',
  '--pretty',
  'false',
  '--ignoreConfig',
];
const PASSES = [
  {
    lib: 'ES2023,DOM,DOM.Iterable',
    types: 'node',
    entries: [
      'src/runtime/index.ts',
      'src/runtime/tool-entry.ts',
      'src/runtime/routing.ts',
      'src/node/index.ts',
      'src/testing/index.ts',
      'src/runtime/channels/github.ts',
      'src/otel/index.ts',
    ],
  },
  { lib: 'ES2023', types: '@cloudflare/workers-types', entries: ['src/durable-objects/index.ts', 'src/workflows/index.ts'] },
];

export function buildTypes(dir = outdir) {
  rmSync(dir, { recursive: true, force: true });
  for (const pass of PASSES) {
    const args = [tsc, ...COMMON, '--outDir', dir, '--lib', pass.lib, '--types', pass.types, ...pass.entries];
    const run = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`tsc (declarations of ${pass.entries.join(', ')}) failed:\n${run.stdout}${run.stderr}`);
  }
  rewriteSpecifiers(dir);
  checkDeclarations(dir);
  checkCitations(dir);
  checkCitations(path.join(root, 'types')); // shipped as written (`types/skill-md.d.ts`)
}

// Where each export runs, so which globals its declarations are checked against. A Worker project
// has the Workers runtime's (and no Node or DOM ones); `./node` and `./testing` run in Node.
const TARGETS = [
  {
    name: 'Workers',
    lib: ['ES2023'],
    types: ['@cloudflare/workers-types'],
    entries: ['.', './tool', './routing', './cloudflare', './workflows', './channels/github', './otel'],
  },
  { name: 'Node', lib: ['ES2023', 'DOM', 'DOM.Iterable'], types: ['node'], entries: ['./node', './testing'] },
];
/** Declaration files no entry may load, by where they are installed. */
const FORBIDDEN = [
  { pattern: /\/node_modules\/@earendil-works\//, why: "pi-ai's types (and its provider SDKs' through them)" },
  { pattern: /\/node_modules\/@types\/node\//, why: "Node's globals" },
];

/**
 * Type-checks the declarations in `dir` as a project that imports each entry does, and fails on
 * errors or on a forbidden declaration file loaded (for the Node entries, Node's own globals are
 * expected). `@flue/runtime` specifiers inside the declarations resolve to `dir` too.
 */
export function checkDeclarations(dir = outdir, targets = TARGETS) {
  const exportsMap = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).exports;
  const declarationOf = (entry) => path.join(dir, path.relative('./dist/types', exportsMap[entry].types));
  const paths = {};
  for (const entry of targets.flatMap((target) => target.entries)) paths[path.posix.join('@flue/runtime', entry)] = [declarationOf(entry)];
  const problems = [];
  for (const target of targets) {
    const config = path.join(dir, `tsconfig.check-${target.name.toLowerCase()}.json`);
    const compilerOptions = {
      target: 'ES2023',
      module: 'ESNext',
      moduleResolution: 'bundler',
      lib: target.lib,
      types: target.types,
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      paths,
    };
    writeFileSync(config, JSON.stringify({ compilerOptions, files: target.entries.map(declarationOf) }));
    const run = spawnSync(process.execPath, [tsc, '-p', config, '--listFiles', '--pretty', 'false'], { cwd: root, encoding: 'utf8' });
    rmSync(config);
    const lines = `${run.stdout}${run.stderr}`.split('\n').filter((line) => line !== '');
    const errors = lines.filter((line) => !path.isAbsolute(line));
    if (run.status !== 0 || errors.length > 0) {
      const more = errors.length > 20 ? `\n… and ${errors.length - 20} more lines` : '';
      problems.push(`${target.name} entries (${target.entries.join(', ')}) do not type-check:\n${errors.slice(0, 20).join('\n')}${more}`);
    }
    for (const { pattern, why } of FORBIDDEN) {
      if (target.types.includes('node') && why === "Node's globals") continue;
      const loaded = lines.filter((line) => path.isAbsolute(line) && pattern.test(line));
      if (loaded.length > 0)
        problems.push(`${target.name} entries (${target.entries.join(', ')}) load ${why}:\n${loaded.slice(0, 5).join('\n')}`);
    }
  }
  if (problems.length > 0) throw new Error(`The emitted declarations in ${dir} are not fit to publish:\n${problems.join('\n')}`);
}

// What a published comment may not cite: the package ships README.md and no other document, so a
// comment that sends its reader to a design document (`tools.md §4`, `docs/limits.md`), a section
// of one (`§5.1`, `Decision 2`) or the Flue API's source texts ("seed 004") points nowhere in a
// user's editor. Upper-case file names (`SKILL.md`, `AGENTS.md`) are file formats, not citations;
// RFC sections are public.
const CITATIONS = [
  { pattern: /(?<![\w./-])[a-z][a-z0-9-]*\.md\b/, what: 'a document the package does not ship' },
  { pattern: /\bdocs\//, what: 'a docs/ path the package does not ship' },
  { pattern: /(?<!RFC \d+ )§\s?\d|\bDecision \d/, what: 'a section of a document the package does not ship' },
  { pattern: /(?<![`\w])seeds?(?:'s)?\b(?![`:])/i, what: 'the seed documents, which the package does not ship' },
  { pattern: /\(R\d+\)/, what: 'a requirement id of a document the package does not ship' },
];

/** Throws when a comment in the declarations in `dir` cites a document users do not have. */
export function checkCitations(dir = outdir) {
  const problems = [];
  const visit = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const file = path.join(folder, entry.name);
      if (entry.isDirectory()) visit(file);
      else if (entry.name.endsWith('.d.ts')) {
        readFileSync(file, 'utf8')
          .split('\n')
          .forEach((line, i) => {
            const hit = CITATIONS.find(({ pattern }) => pattern.test(line));
            if (hit) problems.push(`${path.relative(dir, file)}:${i + 1} cites ${hit.what}: ${line.trim()}`);
          });
      }
    }
  };
  visit(dir);
  if (problems.length > 0) {
    throw new Error(
      `Comments in the emitted declarations cite what users cannot read; say it in the comment itself (the source is the file under src/ of the same path):\n${problems.join('\n')}`,
    );
  }
}

const RELATIVE_TS = /(['"])(\.{1,2}\/[^'"\n]*?)\.ts\1/g;

function rewriteSpecifiers(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) rewriteSpecifiers(file);
    else if (entry.name.endsWith('.d.ts')) {
      const text = readFileSync(file, 'utf8');
      const next = text.replace(RELATIVE_TS, '$1$2.js$1');
      if (next !== text) writeFileSync(file, next);
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildTypes();
