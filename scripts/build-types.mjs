// Emits the declarations of every export into dist/types/ (run by `npm pack` through "prepack"),
// so a project type-checks against .d.ts files with `skipLibCheck: false` and never compiles our
// sources. The pinned TypeScript 7 (native tsc) emits declarations itself; no second tool needed.
//
// Two passes, because the entries are written against two different sets of globals: the runtime,
// Node and testing entries against Node's, the Cloudflare entries against the Workers runtime's
// (the same split as tsconfig.json / tsconfig.workers.json). Relative specifiers are written as
// `./x.ts` in the sources; the emitted files say `./x.js`, which every resolution mode maps to
// `./x.d.ts` (a `.ts` specifier would need `allowImportingTsExtensions` in the user's project).
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
  '--declaration', '--emitDeclarationOnly', '--rootDir', 'src', '--outDir', 'dist/types',
  '--target', 'ES2023', '--module', 'ESNext', '--moduleResolution', 'bundler',
  '--allowImportingTsExtensions', '--verbatimModuleSyntax', '--strict', '--skipLibCheck',
  '--customConditions', 'flue-source', '--pretty', 'false', '--ignoreConfig',
];
const PASSES = [
  { lib: 'ES2023,DOM,DOM.Iterable', types: 'node', entries: ['src/runtime/index.ts', 'src/runtime/tool-entry.ts', 'src/runtime/routing.ts', 'src/node/index.ts', 'src/testing/index.ts', 'src/runtime/channels/github.ts', 'src/otel/index.ts'] },
  { lib: 'ES2023', types: '@cloudflare/workers-types', entries: ['src/durable-objects/index.ts', 'src/workflows/index.ts'] },
];

export function buildTypes() {
  rmSync(outdir, { recursive: true, force: true });
  for (const pass of PASSES) {
    const run = spawnSync(process.execPath, [tsc, ...COMMON, '--lib', pass.lib, '--types', pass.types, ...pass.entries], { cwd: root, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`tsc (declarations of ${pass.entries.join(', ')}) failed:\n${run.stdout}${run.stderr}`);
  }
  rewriteSpecifiers(outdir);
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
